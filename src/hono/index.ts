import type { Context, MiddlewareHandler, Next } from "hono";
import { idempotencyEngine, type PurgeOptions } from "../owner/engine.js";
import type { IdempotencyOptions } from "../owner/options.js";
import { toFetchResponse } from "../owner/response-body.js";

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
 * request body through Hono's body cache, so handlers must read it through `c.req` (`json()`, `text()`,
 * `parseBody()`, validators), not from `c.req.raw`. It waits for the whole response body before sending it, so it
 * does not suit streamed responses.
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
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      await lock.finish({ status: 500, headers: [], body: new Uint8Array(0), threw: true });
      throw error;
    }
    const body = bytes.byteLength <= lock.maxResponseBytes ? bytes : undefined;
    await lock.finish({
      status: response.status,
      headers: response.headers,
      body,
      threw: c.error !== undefined,
    });
    // Read once and rebuilt, which is far cheaper than a clone; unset first so that Hono does not merge the two.
    c.res = undefined as unknown as Response;
    c.res = toFetchResponse({ status: response.status, headers: [...response.headers], body: bytes });
    return undefined;
  }

  return Object.assign(idempotency, { purge: engine.purge });
}

/** Path and query of an absolute URL, without parsing all of it. */
function requestTarget(url: string): string {
  const start = url.indexOf("/", url.indexOf("://") + 3);
  return start === -1 ? "/" : url.slice(start);
}

/**
 * Through Hono's body cache, from which `c.req.json()`, `text()`, `parseBody()` and validators read it again; a
 * clone of `c.req.raw` would leave the raw body unread, but costs several times more.
 */
function readBody(c: Context): Promise<ArrayBuffer> {
  return c.req.arrayBuffer();
}
