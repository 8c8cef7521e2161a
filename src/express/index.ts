import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders } from "node:http";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { idempotencyEngine, type PurgeOptions } from "../owner/engine.js";
import type { RequestBody } from "../owner/fingerprint.js";
import type { Lock } from "../owner/lock.js";
import { isMarkedNoEffect } from "../owner/no-effect.js";
import { addHeaderPairs, headerPairs, keyFieldsOf } from "../owner/node-headers.js";
import type { IdempotencyOptions } from "../owner/options.js";
import type { OwnerResponse } from "../owner/problem.js";

export { markNoEffect } from "../owner/no-effect.js";
export type { IdempotencyErrorEvent, IdempotencyOptions, SaveOutcome } from "../owner/options.js";
export { ProblemType } from "../owner/problem.js";

/**
 * The middleware, with `purge()` to remove expired records (see `IdempotencyEngine.purge`). Named with its framework:
 * each adapter's middleware type differs, and a type's name is read in docs and errors without its subpath.
 */
export interface ExpressIdempotencyMiddleware extends RequestHandler {
  purge(options?: PurgeOptions): Promise<number>;
}

/** @deprecated Named `ExpressIdempotencyMiddleware` now. */
export type IdempotencyMiddleware = ExpressIdempotencyMiddleware;

/**
 * Express middleware that makes POST and PATCH requests with an `Idempotency-Key` take effect once: the first runs
 * the handler and its response is saved before it is sent, a retry gets the saved response with
 * `Idempotent-Replayed: true`, a concurrent duplicate gets 409, the key reused for another request gets 422.
 * Options are documented on `IdempotencyOptions`; `scope` receives the `Request`.
 *
 * Mount it after authentication and after the body parser (`express.json()`, `express.raw()`, ...): the request
 * fingerprint uses the raw bytes when the parser kept them (`express.json({ verify: keepRawBody })`, the exact
 * form), else `req.body` (a parsed object in exact JSON form, a Buffer or string as bytes). When no parser ran, it
 * reads at most `maxBodyBytes` of the body itself and leaves it on `req.body` as a Buffer, as `express.raw()` would.
 *
 * Express gives middleware no way to tell a thrown error from a response, so `save` sees `threw: false`, and what
 * the error handler sent is saved and replayed like any other answer. An error handler releases the key for an
 * error that says nothing happened by calling `markNoEffect(res)`.
 *
 * @example
 * app.use((err, req, res, next) => {
 *   if (err.noEffect === true) markNoEffect(res);
 *   res.status(err.status ?? 500).json({ error: err.message });
 * });
 *
 * @example app.post("/charges", express.json(), idempotency({ store, scope: (req) => req.user.account }), createCharge)
 */
export function idempotency(options: IdempotencyOptions<Request>): ExpressIdempotencyMiddleware {
  const engine = idempotencyEngine(options);

  async function idempotency(req: Request, res: Response, next: NextFunction): Promise<void> {
    try {
      const decision = await engine.begin({
        method: req.method,
        target: req.originalUrl,
        keyFields: keyFieldsOf(req),
        contentType: req.headers["content-type"],
        contentLength: req.headers["content-length"],
        body: (limit) => requestBody(req, limit),
        request: req,
      });
      if (decision.action === "pass") return next();
      if (decision.action === "respond") return send(res, decision.response);
      capture(res, decision.lock);
      next();
    } catch (error) {
      next(error);
    }
  }

  return Object.assign(idempotency, { purge: engine.purge });
}

const rawBodies = new WeakMap<IncomingMessage, Buffer>();

/**
 * A body parser's `verify` hook that keeps the raw bytes for the fingerprint, so that two JSON bodies the parser
 * would make one value of (`9007199254740993` and `9007199254740992`, a member named twice) stay apart, and a
 * duplicate member name is refused with 400. Without it the middleware fingerprints the parsed `req.body`.
 *
 * @example app.use(express.json({ verify: keepRawBody }))
 */
export function keepRawBody(req: IncomingMessage, _res: unknown, bytes: Buffer): void {
  rawBodies.set(req, bytes);
}

async function requestBody(req: Request, limit: number): Promise<RequestBody> {
  const raw = rawBodies.get(req);
  if (raw !== undefined) return raw.byteLength > limit ? { tooLarge: true } : { bytes: raw };
  if (req.body !== undefined) return { parsed: req.body };
  // Read by someone who left no `req.body` (a parser that found no body): there is nothing left to read.
  if (req.readableEnded) return { bytes: new Uint8Array(0) };
  const read = await readLimited(req, limit);
  if ("tooLarge" in read) return read;
  if (read.bytes.byteLength > 0) req.body = read.bytes;
  return read;
}

/**
 * Reads at most `limit` bytes. Past it the rest is read and dropped (as body-parser does), not left unread or cut
 * off, so that the client gets the 413 rather than a reset connection, and memory stays at `limit`.
 */
function readLimited(req: IncomingMessage, limit: number): Promise<{ bytes: Buffer } | { tooLarge: true }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total <= limit) {
        chunks.push(chunk);
        return;
      }
      chunks.length = 0;
      req.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
      req.on("error", () => {});
      req.resume();
      resolve({ tooLarge: true });
    };
    const onEnd = () => resolve({ bytes: Buffer.concat(chunks, total) });
    const onError = (error: Error) => reject(error);
    // A client that goes away mid-body: nothing to answer, but the promise must settle (no claim is made).
    const onClose = () => {
      if (!req.readableEnded)
        reject(new Error("the client closed the connection before sending the whole body"));
    };
    req.on("data", onData).on("end", onEnd).on("error", onError).once("close", onClose);
  });
}

function send(res: Response, response: OwnerResponse): void {
  res.statusCode = response.status;
  for (const [name, value] of response.headers) res.appendHeader(name, value);
  res.end(Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength));
}

type End = (this: Response, ...args: unknown[]) => Response;
type Write = (this: Response, ...args: unknown[]) => boolean;
type WriteHead = (this: Response, ...args: unknown[]) => Response;

/** One response being captured: what the handler wrote so far, and the methods the capture stands in front of. */
interface Capture {
  readonly lock: Lock;
  readonly write: Write;
  readonly end: End;
  readonly writeHead: WriteHead;
  readonly chunks: Buffer[];
  readonly headArguments: OutgoingHttpHeaders[];
  total: number;
  /** `end` was called: the capture is over and the methods pass straight through. */
  done: boolean;
}

/**
 * Each captured response's state, looked up by the shared methods below: a response gets no closures and, in the
 * common case, no own properties (issue 44: five closures and three own properties per request were 4.6 µs and
 * 3.6 KB of it). The entry goes with the response.
 */
const captures = new WeakMap<Response, Capture>();
/** For each prototype a response has (Express gives each app its own), the one that puts the capture before it. */
const capturing = new WeakMap<object, object>();

/**
 * Copies what the handler writes (up to `maxResponseBytes`) and holds back `end` until the response is saved, so
 * that a client which has seen the response always finds it saved when it retries.
 */
function capture(res: Response, lock: Lock): void {
  captures.set(res, {
    lock,
    write: res.write as unknown as Write,
    end: res.end as unknown as End,
    writeHead: res.writeHead as unknown as WriteHead,
    chunks: [],
    headArguments: [],
    total: 0,
    done: false,
  });
  if (!Object.hasOwn(res, "write") && !Object.hasOwn(res, "end") && !Object.hasOwn(res, "writeHead")) {
    // The response's own prototype, with the capture put in front of it.
    const proto = Object.getPrototypeOf(res) as object;
    let front = capturing.get(proto);
    if (front === undefined) {
      front = Object.create(proto, {
        write: { value: captureWrite, writable: true, configurable: true },
        end: { value: captureEnd, writable: true, configurable: true },
        writeHead: { value: captureWriteHead, writable: true, configurable: true },
      }) as object;
      capturing.set(proto, front);
    }
    Object.setPrototypeOf(res, front);
    return;
  }
  // Another middleware put its own methods on this response (compression does): stand in front of those.
  res.write = captureWrite as unknown as Response["write"];
  res.end = captureEnd as unknown as Response["end"];
  res.writeHead = captureWriteHead as unknown as Response["writeHead"];
}

// `own`: bytes that nobody else holds may be kept as they are. A chunk given to `write` is copied (the handler may
// reuse its buffer once it is written); the one given to `end` is not, as it is sent after the save, as it is.
function copy(c: Capture, chunk: unknown, encoding: unknown, own: boolean): void {
  if (chunk === undefined || chunk === null || typeof chunk === "function") return;
  const bytes =
    typeof chunk === "string"
      ? Buffer.from(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8")
      : own && Buffer.isBuffer(chunk)
        ? chunk
        : Buffer.from(chunk as Uint8Array);
  c.total += bytes.byteLength;
  if (c.total <= c.lock.maxResponseBytes) c.chunks.push(bytes);
  else c.chunks.length = 0;
}

function captureWriteHead(this: Response, ...args: unknown[]): Response {
  const c = captures.get(this)!;
  if (!c.done) {
    const headers = args.find((arg, i) => i > 0 && typeof arg === "object" && arg !== null);
    if (headers) c.headArguments.push(headerObject(headers));
  }
  return c.writeHead.apply(this, args);
}

function captureWrite(this: Response, ...args: unknown[]): boolean {
  const c = captures.get(this)!;
  if (!c.done) copy(c, args[0], args[1], false);
  return c.write.apply(this, args);
}

function captureEnd(this: Response, ...args: unknown[]): Response {
  const c = captures.get(this)!;
  if (c.done) return c.end.apply(this, args);
  c.done = true;
  copy(c, args[0], args[1], true);
  const { lock, total, chunks } = c;
  const body =
    total > lock.maxResponseBytes
      ? undefined
      : chunks.length === 1
        ? chunks[0]
        : Buffer.concat(chunks, total);
  const headers = responseHeaders(this, c.headArguments, lock.keepHeaders);
  // `finish` reports its own failures and never rejects; the response goes out whatever happened to the save.
  void lock
    .finish({
      status: this.statusCode,
      headers,
      body,
      threw: false,
      noEffect: isMarkedNoEffect(this, this.req),
    })
    .finally(() => c.end.apply(this, args));
  return this;
}

/**
 * The kept headers sent (only those are saved): those set with `setHeader`, overridden by those given to
 * `writeHead`, which Node sometimes merges into `getHeaders()` and sometimes sends without keeping.
 */
function responseHeaders(
  res: Response,
  headArguments: readonly OutgoingHttpHeaders[],
  keep: ReadonlySet<string>,
): [string, string][] {
  // Without writeHead's headers (a handler that sets them with setHeader, as res.json does), those set are all of
  // them, under lowercase names already: no copy of them all (`getHeaders()`), no regrouping.
  if (headArguments.length === 0) {
    const pairs: [string, string][] = [];
    for (const name of res.getHeaderNames())
      if (keep.has(name)) addHeaderPairs(pairs, name, res.getHeader(name));
    return pairs;
  }
  const byName = new Map<string, [string, string][]>();
  for (const headers of [res.getHeaders(), ...headArguments]) {
    const given = new Map<string, [string, string][]>();
    for (const [name, value] of headerPairs(headers)) {
      const lower = name.toLowerCase();
      if (!keep.has(lower)) continue;
      given.set(lower, [...(given.get(lower) ?? []), [lower, value]]);
    }
    for (const [name, pairs] of given) byName.set(name, pairs);
  }
  return [...byName.values()].flat();
}

/** `writeHead` takes an object or a flat array of names and values. */
function headerObject(headers: unknown): OutgoingHttpHeaders {
  if (!Array.isArray(headers)) return headers as OutgoingHttpHeaders;
  const out: OutgoingHttpHeaders = {};
  for (let i = 0; i + 1 < headers.length; i += 2)
    out[String(headers[i])] = headers[i + 1] as OutgoingHttpHeader;
  return out;
}
