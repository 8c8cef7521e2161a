import type { Context } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  type ReadableSpan,
  type Span,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { tracedHarness } from "../../../../src/otel/index.js";
import type { World } from "../world.js";
import { harnessDriverOf } from "./harness.js";

/** A span processor that fails on every span while the world's hooks fail: an exporter whose backend is down. */
function failingProcessor(world: World): SpanProcessor {
  const fail = () => {
    if (world.faults.throwingHook) throw new Error("the span processor is down");
  };
  return {
    onStart: (_span: Span, _context: Context) => fail(),
    onEnd: (_span: ReadableSpan) => fail(),
    forceFlush: async () => {},
    shutdown: async () => {},
  };
}

/** `tracedHarness`, with a span processor that throws while the scenario's hooks do: the bare harness's row. */
export const otelDriver = harnessDriverOf("tracedHarness (OpenTelemetry)", (world, options) =>
  tracedHarness(options, {
    tracerProvider: new BasicTracerProvider({ spanProcessors: [failingProcessor(world)] }),
  }),
);
