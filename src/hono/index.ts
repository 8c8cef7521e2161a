import type { Context, MiddlewareHandler, Next } from "hono";
import { idempotencyEngine, type PurgeOptions } from "../owner/engine.js";
import type { IdempotencyOptions } from "../owner/options.js";
import { readAtMost, toFetchResponse } from "../owner/response-body.js";

export type { IdempotencyErrorEvent, IdempotencyOptions, SaveOutcome } from "../owner/options.js";
export { ProblemType } from "../owner/problem.js";

/** The middleware, with `purge()` to remove expired records (see `IdempotencyEngine.purge`). */
export interface IdempotencyMiddleware extends MiddlewareHandler {
  purge(options?: PurgeOptions): Promise<number>;
}

/**
 * Hono middleware that makes POST and PATCH requests with an `Idempotency-Key` take effect once: the first runs
 * the handler and its response is saved, a retry gets the saved response with `Idempotent-Replayed: true`, a
 * concurrent duplicate gets 409, the key reused for another request gets 422. Options are documented on
 * `IdempotencyOptions`; `scope` receives the `Context`.
 *
 * Mount it after authentication (so `scope` can name the caller) and before the handlers it protects. It reads the
 * request body from a clone, so handlers read it as usual, and it waits for the whole response body before sending
 * it, so it does not suit streamed responses.
 *
 * @example app.post("/charges", idempotency({ store, scope: (c) => c.get("accountId") }), createCharge)
 */
export function idempotency(options: IdempotencyOptions<Context>): IdempotencyMiddleware {
  const engine = idempotencyEngine(options);

  async function idempotency(c: Context, next: Next): Promise<Response | undefined> {
    const key = c.req.raw.headers.get("idempotency-key");
    const decision = await engine.begin({
      method: c.req.method,
      target: requestTarget(c.req.url),
      keyFields: key === null ? undefined : [key],
      contentType: c.req.header("content-type"),
      body: async () => ({ bytes: new Uint8Array(await readBody(c)) }),
      request: c,
    });
    if (decision.action === "pass") {
      await next();
      return undefined;
    }
    if (decision.action === "respond") return toFetchResponse(decision.response);

    const { lock } = decision;
    try {
      await next();
    } catch (error) {
      // Only reached when no error handler answered; Hono's own `onError` leaves the error on `c.error` instead.
      await lock.finish({ status: 500, headers: [], body: new Uint8Array(0), threw: true });
      throw error;
    }
    const response = c.res;
    let body: Uint8Array | undefined;
    try {
      body = await readAtMost(response.clone().body, lock.maxResponseBytes);
    } catch (error) {
      await lock.finish({ status: 500, headers: [], body: new Uint8Array(0), threw: true });
      throw error;
    }
    await lock.finish({
      status: response.status,
      headers: response.headers,
      body,
      threw: c.error !== undefined,
    });
    return undefined;
  }

  return Object.assign(idempotency, { purge: engine.purge });
}

/** Path and query of an absolute URL, without parsing all of it. */
function requestTarget(url: string): string {
  const start = url.indexOf("/", url.indexOf("://") + 3);
  return start === -1 ? "/" : url.slice(start);
}

/** From a clone when the body is still unread (a handler may read `c.req.raw`); else from Hono's body cache. */
function readBody(c: Context): Promise<ArrayBuffer> {
  return c.req.raw.bodyUsed ? c.req.arrayBuffer() : c.req.raw.clone().arrayBuffer();
}
