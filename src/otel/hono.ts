import type { Attributes } from "@opentelemetry/api";
import type { Context, MiddlewareHandler, Next } from "hono";
import { SpanKind, SpanStatusCode } from "./api.js";
import { Attr, Outcome } from "./attributes.js";
import { instruments, type TelemetryOptions } from "./instruments.js";
import { countRefusal, ownerRefusal } from "./owner-refusal.js";

/**
 * `idempotency()` from `idemkey/hono`, traced: each request it sees is a span named `idempotency <METHOD>`, a child of
 * the request's span, with the `Idempotency-Key` (`idemkey.key`), the status, and `idemkey.outcome`: `executed` when
 * the handler ran, `replayed` when the saved response was sent (`Idempotent-Replayed: true`), `refused` when the
 * middleware answered without running the handler (a key in flight, reused, missing or invalid, an unknown outcome,
 * the store unavailable: the status says which, and `idemkey.refusal` names the last four). Counted in `idemkey.calls`,
 * `idemkey.replays`, `idemkey.conflicts` (key reused), `idemkey.in_flight` and `idemkey.outcome_unknown`. With
 * `hashKeys`, the key is written as its SHA-256. `purge()` and other properties of the middleware are kept.
 *
 * @example app.post("/charges", tracedHono(idempotency({ store, scope: (c) => c.get("accountId") })), createCharge)
 */
export function tracedHono<M extends MiddlewareHandler>(middleware: M, telemetry?: TelemetryOptions): M {
  if (typeof middleware !== "function") throw new TypeError("middleware must be what idempotency() returned");
  const meters = instruments(telemetry);

  async function traced(c: Context, next: Next) {
    const attributes: Attributes = { "http.request.method": c.req.method };
    const key = c.req.header("idempotency-key");
    if (key !== undefined) Object.assign(attributes, meters.keys.attributes(key));
    const span = meters.startSpan(`idempotency ${c.req.method}`, { kind: SpanKind.INTERNAL, attributes });
    return meters.withSpan(span, async () => {
      let ran = false;
      try {
        const answer = await middleware(c, async () => {
          ran = true;
          await next();
        });
        const response = answer instanceof Response ? answer : c.res;
        const outcome = ran
          ? Outcome.executed
          : response.headers.get("idempotent-replayed") === "true"
            ? Outcome.replayed
            : Outcome.refused;
        span.setAttribute("http.response.status_code", response.status);
        span.setAttribute(Attr.outcome, outcome);
        if (response.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        meters.calls.add(1, { [Attr.outcome]: outcome });
        if (outcome === Outcome.replayed) meters.replays.add(1);
        if (outcome === Outcome.refused) {
          const refusal = ownerRefusal(response.status, response.headers.get("x-should-retry"));
          if (refusal !== undefined) span.setAttribute(Attr.refusal, refusal);
          countRefusal(meters, refusal, {});
        }
        return answer;
      } catch (error) {
        span.recordException(meters.keys.exception(error, [key]));
        span.setStatus({ code: SpanStatusCode.ERROR, message: meters.keys.scrub(String(error), [key]) });
        span.setAttribute(Attr.outcome, Outcome.failed);
        throw error;
      } finally {
        span.end();
      }
    });
  }
  return Object.assign(traced, middleware) as unknown as M;
}
