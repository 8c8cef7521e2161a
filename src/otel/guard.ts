import type { Context, Counter, Span, SpanOptions, Tracer } from "@opentelemetry/api";
import { reporter } from "../options/report.js";
import { context, INVALID_SPAN_CONTEXT, trace } from "./api.js";

/**
 * Telemetry that cannot change an outcome. A span processor, an exporter or a meter's view runs inside the calls
 * that start and end spans and add to counters, and any of them may throw: by then the tool may have run and its
 * result been recorded, so a throw would turn a done effect into a failed call (and every replay of it). Each
 * failure is reported instead, through the reporter every other hook uses (an `IdemkeyWarning`), once per kind of
 * failure for each factory call: a broken pipeline fails on every call, and one warning says so.
 */
export interface Guard {
  /** Starts a span as `tracer.startSpan` does; one that fails to start is a non-recording stand-in. */
  startSpan(tracer: Tracer, name: string, options: SpanOptions): Span;
  /** Runs `fn` with `span` active, as `startActiveSpan` does, without handing `fn` to the tracer. */
  withSpan<T>(span: Span, fn: () => T): T;
  /** `counter`, whose `add` reports a failure instead of throwing it. */
  counter(counter: Counter, name: string): Counter;
}

export function guard(): Guard {
  const reported = new Set<string>();
  const report = reporter<{ what: string; error: unknown }>(
    undefined,
    "telemetry",
    ({ what, error }) =>
      `telemetry failed ${what}: ${String(error)}. The call's outcome is unchanged; this telemetry's further ` +
      "failures of this kind are not reported.",
  );
  // `kind` says what failed, `what` the same with the span or counter's name: one warning per kind.
  const safely = (kind: string, what: string, fn: () => void): void => {
    try {
      fn();
    } catch (error) {
      if (reported.has(kind)) return;
      reported.add(kind);
      report({ what, error });
    }
  };

  const guardedSpan = (span: Span, name: string): Span => {
    const writing = `writing to span "${name}"`;
    const self: Span = {
      spanContext: () => span.spanContext(),
      isRecording: () => span.isRecording(),
      setAttribute: (key, value) => chain(() => span.setAttribute(key, value)),
      setAttributes: (attributes) => chain(() => span.setAttributes(attributes)),
      addEvent: (event, attributesOrTime, time) => chain(() => span.addEvent(event, attributesOrTime, time)),
      addLink: (link) => chain(() => span.addLink(link)),
      addLinks: (links) => chain(() => span.addLinks(links)),
      setStatus: (status) => chain(() => span.setStatus(status)),
      updateName: (next) => chain(() => span.updateName(next)),
      recordException: (exception, time) =>
        safely("write", writing, () => span.recordException(exception, time)),
      end: (time) => safely("end", `ending span "${name}"`, () => span.end(time)),
    };
    function chain(fn: () => void): Span {
      safely("write", writing, fn);
      return self;
    }
    return self;
  };

  return {
    startSpan(tracer, name, options) {
      let span: Span | undefined;
      safely("start", `starting span "${name}"`, () => {
        span = tracer.startSpan(name, options);
      });
      // A stand-in that records nothing, with the caller's span context: spans started under it keep their parent.
      return span === undefined
        ? trace.wrapSpanContext(trace.getSpanContext(context.active()) ?? INVALID_SPAN_CONTEXT)
        : guardedSpan(span, name);
    },
    withSpan(span, fn) {
      const active: Context = trace.setSpan(context.active(), span);
      return context.with(active, fn);
    },
    counter(counter, name) {
      return {
        add: (value, attributes, ctx) =>
          safely("count", `adding to counter "${name}"`, () => counter.add(value, attributes, ctx)),
      };
    },
  };
}
