import type { Meter, MeterProvider, SpanOptions, TracerProvider } from "@opentelemetry/api";
import { metrics, trace } from "./api.js";
import { SCOPE } from "./attributes.js";
import { guard } from "./guard.js";
import { keyWriter } from "./key-attributes.js";

/**
 * Where `idemkey/otel` sends its spans and metrics. A processor, exporter or instrument of theirs that throws never
 * changes what a call, a request or a tool call returns: the failure is reported once per kind (starting a span,
 * writing to one, ending one, counting) as an `IdemkeyWarning`, and the call goes on.
 */
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
  /**
   * Writes each key as its SHA-256 (`idemkey.key_sha256`, lowercase hex) instead of as itself (`idemkey.key`), in
   * span attributes, span events, exception messages and the baggage the tool's requests carry, for a trace backend
   * that must not hold keys: a key found in the ledger still matches its hash, which tells nothing about the call.
   * @default false
   */
  hashKeys?: boolean;
}

/**
 * The tracer and the counters, made once per factory call; every span and count goes through `guard`, so that a
 * failing processor, exporter or instrument is reported and never thrown into the call it observes.
 */
export function instruments(options: TelemetryOptions | undefined) {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new TypeError("options must be an object");
  }
  const { tracerProvider, meterProvider, hashKeys = false } = options ?? {};
  if (typeof hashKeys !== "boolean") {
    throw new TypeError(`options.hashKeys must be a boolean, got ${typeof hashKeys}`);
  }
  if (tracerProvider !== undefined && typeof tracerProvider?.getTracer !== "function") {
    throw new TypeError("options.tracerProvider must be a TracerProvider (with getTracer)");
  }
  if (meterProvider !== undefined && typeof meterProvider?.getMeter !== "function") {
    throw new TypeError("options.meterProvider must be a MeterProvider (with getMeter)");
  }
  const tracer = (tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  const meter: Meter = (meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE);
  const safe = guard();
  const counter = (name: string, description: string) =>
    safe.counter(meter.createCounter(name, { description }), name);
  return {
    /** The key's attribute (or its hash's), and the text of an error with the key replaced by its hash. */
    keys: keyWriter(hashKeys),
    startSpan: (name: string, options: SpanOptions) => safe.startSpan(tracer, name, options),
    withSpan: safe.withSpan,
    calls: counter("idemkey.calls", "Tool calls that ended, by idemkey.outcome"),
    replays: counter("idemkey.replays", "Calls answered from a recorded result without running the tool"),
    takeovers: counter("idemkey.takeovers", "Claims taken over from a process that stopped"),
    unknown: counter("idemkey.outcome_unknown", "Calls whose outcome became unknown (OutcomeUnknownError)"),
    waits: counter("idemkey.waits", "Waits for the same call running elsewhere or for an approval"),
    conflicts: counter(
      "idemkey.conflicts",
      "Calls or requests refused because their key was used for another request (IdempotencyConflictError, 422)",
    ),
    inFlight: counter(
      "idemkey.in_flight",
      "Requests an owner refused because the same key was still running (409 key-in-flight, key_in_flight)",
    ),
    resolutions: counter(
      "idemkey.resolutions",
      "Unknown outcomes resolved, by idemkey.resolved_how (result or retry: by a person; reconcile; late_completion)",
    ),
    reconciled: counter(
      "idemkey.reconciler.decisions",
      "Records a reconciler looked at, by idemkey.reconcile_outcome (done, not_done, undecided, conflict, failed)",
    ),
  };
}

export type Instruments = ReturnType<typeof instruments>;
