import type { Context, MiddlewareHandler, Next } from "hono";
import { idempotencyEngine, type PurgeOptions } from "../owner/engine.js";
import type { RequestBody } from "../owner/fingerprint.js";
import { isMarkedNoEffect } from "../owner/no-effect.js";
import type { IdempotencyOptions } from "../owner/options.js";
import { concat, toFetchResponse } from "../owner/response-body.js";

export { markNoEffect } from "../owner/no-effect.js";
export type { IdempotencyErrorEvent, IdempotencyOptions, SaveOutcome } from "../owner/options.js";
export { ProblemType } from "../owner/problem.js";

/**
 * The middleware, with `purge()` to remove expired records (see `IdempotencyEngine.purge`). Named with its framework:
 * each adapter's middleware type differs, and a type's name is read in docs and errors without its subpath.
 */
export interface HonoIdempotencyMiddleware extends MiddlewareHandler {
  purge(options?: PurgeOptions): Promise<number>;
}

/** @deprecated Named `HonoIdempotencyMiddleware` now. */
export type IdempotencyMiddleware = HonoIdempotencyMiddleware;

/**
 * Hono middleware that makes POST and PATCH requests with an `Idempotency-Key` take effect once: the first runs
 * the handler and its response is saved, a retry gets the saved response with `Idempotent-Replayed: true`, a
 * concurrent duplicate gets 409, the key reused for another request gets 422. Options are documented on
 * `IdempotencyOptions`; `scope` receives the `Context`.
 *
 * Mount it after authentication (so `scope` can name the caller) and before the handlers it protects. It reads the
 * request body (at most `maxBodyBytes`) through Hono's body cache, so handlers must read it through `c.req` (`json()`, `text()`,
 * `parseBody()`, validators), not from `c.req.raw`. It waits for the whole response body before sending it, so it
 * does not suit streamed responses.
 *
 * @example app.post("/charges", idempotency({ store, scope: (c) => c.get("accountId") }), createCharge)
 */
export function idempotency(options: IdempotencyOptions<Context>): HonoIdempotencyMiddleware {
  const engine = idempotencyEngine(options);

  async function idempotency(c: Context, next: Next): Promise<Response | undefined> {
    const key = c.req.raw.headers.get("idempotency-key");
    const decision = await engine.begin({
      method: c.req.method,
      target: requestTarget(c.req.url),
      keyFields: key === null ? undefined : [key],
      contentType: c.req.header("content-type"),
      contentLength: c.req.header("content-length"),
      body: (limit) => readBody(c, limit),
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
      await lock.finish({ ...failed, error, noEffect: isMarkedNoEffect(c) });
      throw error;
    }
    const response = c.res;
    const built = bodyOf(response);
    let bytes: Uint8Array;
    try {
      bytes = built ?? new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      // The handler's own error, when it threw, says what it did; its response failed only afterwards.
      await lock.finish({ ...failed, error: c.error ?? error, noEffect: isMarkedNoEffect(c) });
      throw error;
    }
    const body = bytes.byteLength <= lock.maxResponseBytes ? bytes : undefined;
    await lock.finish({
      status: response.status,
      headers: response.headers,
      body,
      threw: c.error !== undefined,
      error: c.error,
      noEffect: isMarkedNoEffect(c),
    });
    // A body read from the response itself is gone from it: rebuild the response, which is far cheaper than a
    // clone. Unset first so that Hono does not merge the two.
    if (built === undefined) {
      c.res = undefined as unknown as Response;
      c.res = toFetchResponse({ status: response.status, headers: [...response.headers], body: bytes });
    }
    return undefined;
  }

  return Object.assign(idempotency, { purge: engine.purge });
}

/** What `finish` is told when no response came out of the handler: it threw, or its body could not be read. */
const failed = { status: 500, headers: [], body: new Uint8Array(0), threw: true } as const;

/** Path and query of an absolute URL, without parsing all of it. */
function requestTarget(url: string): string {
  const start = url.indexOf("/", url.indexOf("://") + 3);
  return start === -1 ? "/" : url.slice(start);
}

const utf8 = new TextDecoder();

/**
 * Reads at most `limit` bytes of the body, from the stream (cancelled past the limit, so a huge body is never
 * held), into Hono's body cache, from which `c.req.json()`, `text()`, `parseBody()` and validators read it again;
 * a clone of `c.req.raw` would cost several times more. Hono answers `text()` and `json()` after `arrayBuffer()`
 * through a new `Response` of the cached bytes (web streams on Node); an entry for `text`, decoded only if asked
 * for, spares handlers that.
 */
async function readBody(c: Context, limit: number): Promise<RequestBody> {
  const cache = c.req.bodyCache as Record<string, unknown>;
  let bytes: Uint8Array;
  if (Object.keys(cache).length > 0 || declaredWithin(c.req.header("content-length"), limit)) {
    // Read before us (a validator), so already in memory; or of a declared length within the limit, which the
    // HTTP parser holds the body to. `arrayBuffer()` then takes @hono/node-server's fast path, reading the socket
    // directly: touching `c.req.raw.body` makes it build a web Request and a stream over the socket instead, which
    // made a request with a key cost three times a bare one (13,451 against 4,009 requests a second, memory store).
    bytes = new Uint8Array(await c.req.arrayBuffer());
    if (bytes.byteLength > limit) return { tooLarge: true };
  } else if (c.req.raw.body === null) {
    bytes = new Uint8Array(0);
  } else {
    const read = await readStream(c.req.raw.body, limit);
    if (read === undefined) return { tooLarge: true };
    bytes = read;
    const buffer =
      bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
        ? bytes.buffer
        : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    cache.arrayBuffer = Promise.resolve(buffer);
  }
  if (!("text" in cache)) {
    let text: Promise<string> | undefined;
    Object.defineProperty(cache, "text", {
      configurable: true,
      enumerable: true,
      // What `Response.text()` does: UTF-8 with replacement characters, a leading BOM dropped.
      get: () => (text ??= Promise.resolve(utf8.decode(bytes))),
      set: (value: unknown) => {
        Object.defineProperty(cache, "text", { value, configurable: true, enumerable: true, writable: true });
      },
    });
  }
  return { bytes };
}

/** Whether a Content-Length header names a length of at most `limit` bytes. */
function declaredWithin(header: string | undefined, limit: number): boolean {
  if (header === undefined || !/^\d+$/.test(header)) return false;
  return Number(header) <= limit;
}

/** The whole stream, or `undefined` once it passes `limit` (then cancelled). */
async function readStream(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | undefined> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return concat(chunks, total);
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
}

/**
 * The body a handler's response was built from, where it can be had without reading the response: on
 * `@hono/node-server`, a `Response` made from a string, bytes or `null` (what `c.json()`, `c.text()` and
 * `c.body()` make) keeps them in an own property that node-server writes out directly, without the web streams a
 * read would build. `undefined` for any other response (a stream, or another runtime's `Response`), which is read.
 */
function bodyOf(response: Response): Uint8Array | undefined {
  for (const symbol of Object.getOwnPropertySymbols(response)) {
    if (symbol.description !== "cache") continue;
    const cache: unknown = (response as unknown as Record<symbol, unknown>)[symbol];
    if (!Array.isArray(cache) || cache.length !== 3 || typeof cache[0] !== "number") return undefined;
    const body: unknown = cache[1];
    if (body === null) return new Uint8Array(0);
    if (typeof body === "string") return encoder.encode(body);
    if (body instanceof Uint8Array) return body;
    return undefined;
  }
  return undefined;
}

const encoder = new TextEncoder();
