import { AggregationTemporality, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { createHarness, defineTool, memoryStore, OutcomeUnknownError, sha256Hex } from "../../src/index.js";
import { Attr, tracedReconciler } from "../../src/otel/index.js";
import type { ReconcilerEvent } from "../../src/reconciler/index.js";

/** Collects on demand: the test reads the counters after the sweep, no export timer. */
class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush() {}
  protected async onShutdown() {}
}

describe("tracedReconciler", () => {
  it("counts every decision by outcome and makes one span each, with the key as a hash when asked", async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const reader = new OnDemandReader();
    const meterProvider = new MeterProvider({ readers: [reader] });

    const store = memoryStore();
    const lost = defineTool<{ n: number }, unknown>({
      name: "pay",
      effect: "unguarded",
      run: () => {
        throw new Error("socket hang up");
      },
    });
    const harness = createHarness({ store, retry: { retries: 0 } });
    const keys: string[] = [];
    for (let n = 0; n < 3; n++) {
      await expect(harness.call("task", lost, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
      keys.push(harness.key("task", lost, { n }));
    }
    const pay = defineTool<{ n: number }, unknown>({
      name: "pay",
      effect: "unguarded",
      run: () => undefined,
      reconcile: ({ n }) =>
        n === 0 ? { status: "done", result: n } : n === 1 ? { status: "not_done" } : undefined,
    });
    const own: ReconcilerEvent[] = [];
    const reconciler = tracedReconciler(
      { store, tools: [pay], id: "r-otel", onEvent: (e) => own.push(e) },
      { tracerProvider, meterProvider, hashKeys: true },
    );
    await reconciler.sweep();
    expect(own.map((e) => e.type).sort()).toEqual(["reconciled", "reconciled", "undecided"]);

    const spans = exporter.getFinishedSpans();
    expect(spans).toHaveLength(3);
    for (const span of spans) {
      expect(span.name).toBe("reconcile pay");
      expect(span.attributes[Attr.key]).toBeUndefined();
      expect(span.attributes[Attr.by]).toBe("r-otel");
    }
    expect(new Set(spans.map((s) => s.attributes[Attr.keyHash]))).toEqual(
      new Set(keys.map((k) => sha256Hex(k))),
    );
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain(keys[0]!);

    const { resourceMetrics } = await reader.collect();
    const metric = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === "idemkey.reconciler.decisions")!;
    const counts = Object.fromEntries(
      metric.dataPoints.map((p) => [String(p.attributes[Attr.reconcileOutcome]), p.value]),
    );
    expect(counts).toEqual({ done: 1, not_done: 1, undecided: 1 });
  });
});
