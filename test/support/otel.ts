import { type Attributes, context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { AggregationTemporality, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll } from "vitest";
import { Attr } from "../../src/otel/index.js";

/** Collects on demand: the test reads the counters after the calls, no export timer. */
export class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush() {}
  protected async onShutdown() {}
}

/** An AsyncLocalStorage context manager for the file's tests, so that a span started inside another is its child. */
export function useContextManager(): void {
  const contextManager = new AsyncLocalStorageContextManager();
  beforeAll(() => {
    context.setGlobalContextManager(contextManager.enable());
  });
  afterAll(() => {
    context.disable();
  });
}

/** The attributes a counter's name carries as its labels, in this order: `idemkey.resolutions{result}`. */
const LABELS = [Attr.outcome, Attr.waitedOn, Attr.resolvedHow, Attr.reconcileOutcome];

export interface MetricPoint {
  name: string;
  attributes: Attributes;
  value: number;
}

/**
 * A real SDK pipeline read back in memory: `telemetry` to hand to a traced factory, `spans()` every finished span,
 * `counts()` every counter's total by its name and its `idemkey.*` labels (`idemkey.calls{executed}`).
 */
export function otelPipeline(extra: { hashKeys?: boolean } = {}) {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const points: MetricPoint[] = [];
  return {
    telemetry: { tracerProvider, meterProvider, ...extra },
    spans: (): ReadableSpan[] => exporter.getFinishedSpans(),
    async counts(): Promise<Record<string, number>> {
      const { resourceMetrics } = await reader.collect();
      const out: Record<string, number> = {};
      points.length = 0;
      for (const scope of resourceMetrics.scopeMetrics) {
        for (const metric of scope.metrics) {
          for (const point of metric.dataPoints) {
            points.push({
              name: metric.descriptor.name,
              attributes: point.attributes,
              value: point.value as number,
            });
            const labels = LABELS.map((a) => point.attributes[a]).filter((v) => v !== undefined);
            const name =
              labels.length === 0 ? metric.descriptor.name : `${metric.descriptor.name}{${labels}}`;
            out[name] = (out[name] ?? 0) + (point.value as number);
          }
        }
      }
      return out;
    },
    /** The metric points' attributes as the last `counts()` read them. */
    points: (): readonly MetricPoint[] => points,
    /** Forgets the finished spans; the counters go on counting (a test shared pipeline reads them before and after). */
    reset: () => exporter.reset(),
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

export type OtelPipeline = ReturnType<typeof otelPipeline>;
