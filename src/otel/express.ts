import type { Attributes } from "@opentelemetry/api";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { SpanKind, SpanStatusCode } from "./api.js";
import { Attr, Outcome } from "./attributes.js";
import { instruments, type TelemetryOptions } from "./instruments.js";
import { countRefusal, ownerRefusal } from "./owner-refusal.js";

/**
 * `idempotency()` from `idemkey/express`, traced as `tracedHono` traces Hono's: a span per request named
 * `idempotency <METHOD>`, ended when the response is finished (or the connection closed), with the key, the status and
 * `idemkey.outcome` (`executed`, `replayed` or `refused`, with `idemkey.refusal`), counted as `tracedHono` counts, and
 * the key written as its SHA-256 with `hashKeys`. The handler runs inside the span.
 *
 * @example app.post("/charges", tracedExpress(idempotency({ store, scope: (req) => req.get("x-account-id") ?? "" })), createCharge)
 */
export function tracedExpress<M extends RequestHandler>(middleware: M, telemetry?: TelemetryOptions): M {
  if (typeof middleware !== "function") throw new TypeError("middleware must be what idempotency() returned");
  const meters = instruments(telemetry);

  function traced(req: Request, res: Response, next: NextFunction) {
    const attributes: Attributes = { "http.request.method": req.method };
    const key = req.get("idempotency-key");
    if (key !== undefined) Object.assign(attributes, meters.keys.attributes(key));
    const span = meters.startSpan(`idempotency ${req.method}`, { kind: SpanKind.INTERNAL, attributes });
    let ran = false;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const outcome = ran
        ? Outcome.executed
        : res.getHeader("idempotent-replayed") === "true"
          ? Outcome.replayed
          : Outcome.refused;
      span.setAttribute("http.response.status_code", res.statusCode);
      span.setAttribute(Attr.outcome, outcome);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      meters.calls.add(1, { [Attr.outcome]: outcome });
      if (outcome === Outcome.replayed) meters.replays.add(1);
      if (outcome === Outcome.refused) {
        const retry = res.getHeader("x-should-retry");
        const refusal = ownerRefusal(res.statusCode, typeof retry === "string" ? retry : undefined);
        if (refusal !== undefined) span.setAttribute(Attr.refusal, refusal);
        countRefusal(meters, refusal, {});
      }
      span.end();
    };
    res.once("finish", end);
    res.once("close", end);
    return meters.withSpan(span, () =>
      middleware(req, res, (error?: unknown) => {
        ran = error === undefined;
        next(error as never);
      }),
    );
  }
  return Object.assign(traced, middleware) as unknown as M;
}
