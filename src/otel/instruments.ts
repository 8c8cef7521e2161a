import type { Meter, MeterProvider, TracerProvider } from "@opentelemetry/api";
import { metrics, trace } from "./api.js";
import { SCOPE } from "./attributes.js";

/** Where `idemkey/otel` sends its spans and metrics. */
export interface TelemetryOptions {
  /**
   * Makes the tracer the spans come from.
   * @default the global tracer provider (`trace.getTracerProvider()`), a no-op until an SDK registers one
   */
  tracerProvider?: TracerProvider;
  /**
   * Makes the meter the counters come from.
   * @default the global meter provider (`metrics.getMeterProvider()`), a no-op until an SDK registers one
   */
  meterProvider?: MeterProvider;
}

/** The tracer and the counters, made once per factory call. */
export function instruments(options: TelemetryOptions | undefined) {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new TypeError("options must be an object");
  }
  const { tracerProvider, meterProvider } = options ?? {};
  if (tracerProvider !== undefined && typeof tracerProvider?.getTracer !== "function") {
    throw new TypeError("options.tracerProvider must be a TracerProvider (with getTracer)");
  }
  if (meterProvider !== undefined && typeof meterProvider?.getMeter !== "function") {
    throw new TypeError("options.meterProvider must be a MeterProvider (with getMeter)");
  }
  const tracer = (tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  const meter: Meter = (meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE);
  return {
    tracer,
    calls: meter.createCounter("idemkey.calls", {
      description: "Tool calls that ended, by idemkey.outcome",
    }),
    replays: meter.createCounter("idemkey.replays", {
      description: "Calls answered from a recorded result without running the tool",
    }),
    takeovers: meter.createCounter("idemkey.takeovers", {
      description: "Claims taken over from a process that stopped",
    }),
    unknown: meter.createCounter("idemkey.outcome_unknown", {
      description: "Calls whose outcome became unknown (OutcomeUnknownError)",
    }),
    waits: meter.createCounter("idemkey.waits", {
      description: "Waits for the same call running elsewhere or for an approval",
    }),
  };
}

export type Instruments = ReturnType<typeof instruments>;
