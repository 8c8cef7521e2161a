import { Readable } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { idempotencyEngine, type PurgeOptions } from "../owner/engine.js";
import type { RequestBody } from "../owner/fingerprint.js";
import type { Lock } from "../owner/lock.js";
import { isMarkedNoEffect } from "../owner/no-effect.js";
import { headerPairs, keyFieldsOf } from "../owner/node-headers.js";
import type { IdempotencyOptions } from "../owner/options.js";
import type { OwnerResponse } from "../owner/problem.js";
import { concat } from "../owner/response-body.js";

export { markNoEffect } from "../owner/no-effect.js";
export type { IdempotencyErrorEvent, IdempotencyOptions, SaveOutcome } from "../owner/options.js";
export { ProblemType } from "../owner/problem.js";

/** The plugin, with `purge()` to remove expired records (see `IdempotencyEngine.purge`). */
export interface IdempotencyPlugin {
  (fastify: FastifyInstance): Promise<void>;
  purge(options?: PurgeOptions): Promise<number>;
}

interface RawBody {
  chunks: Buffer[];
  total: number;
  ended: boolean;
  /** Longer than `maxBodyBytes`: copying stopped. */
  tooLarge: boolean;
}

interface Running {
  lock: Lock;
  threw: boolean;
  /** What the handler (or a later hook) threw, as Fastify's `onError` saw it. */
  error?: unknown;
}

/**
 * Fastify plugin that makes POST and PATCH requests with an `Idempotency-Key` take effect once: the first runs the
 * handler and its response is saved before it is sent, a retry gets the saved response with
 * `Idempotent-Replayed: true`, a concurrent duplicate gets 409, the key reused for another request gets 422.
 * Options are documented on `IdempotencyOptions`; `scope` receives the `FastifyRequest`.
 *
 * Like a `fastify-plugin` plugin it is not encapsulated: its hooks apply to the routes of the context it is
 * registered in, children included, so register it in the (sub)app whose routes it protects. It copies the raw
 * body while Fastify parses it, and decides in `preHandler`, after validation and authentication hooks.
 *
 * @example await app.register(idempotency({ store, scope: (request) => request.user.account }))
 */
export function idempotency(options: IdempotencyOptions<FastifyRequest>): IdempotencyPlugin {
  const engine = idempotencyEngine(options);
  const rawBodies = new WeakMap<FastifyRequest, RawBody>();
  const running = new WeakMap<FastifyRequest, Running>();

  async function idempotency(fastify: FastifyInstance): Promise<void> {
    fastify.addHook("preParsing", (request, reply, payload, done) => {
      // What can be decided without the body (no key, a bad key, a declared length past the limit) is answered
      // before Fastify parses it, so its 415 or its own 413 do not answer first.
      const early = engine.screen({
        method: request.method,
        keyFields: keyFieldsOf(request.raw),
        contentLength: request.headers["content-length"],
      });
      if (early?.action === "respond") send(reply, early.response);
      // Only a request with a key can need its body fingerprinted; the rest are not slowed down.
      else if (early === undefined) rawBodies.set(request, recordChunks(payload, engine.maxBodyBytes));
      done(null, payload);
    });

    fastify.addHook("preHandler", async (request, reply) => {
      const decision = await engine.begin({
        method: request.method,
        target: request.url,
        keyFields: keyFieldsOf(request.raw),
        contentType: request.headers["content-type"],
        body: () => requestBody(request, rawBodies.get(request)),
        request,
      });
      if (decision.action === "pass") return;
      if (decision.action === "respond") return send(reply, decision.response);
      running.set(request, { lock: decision.lock, threw: false });
    });

    // Runs before the error handler answers, and so before `onSend`.
    fastify.addHook("onError", (request, _reply, error, done) => {
      const state = running.get(request);
      if (state) {
        state.threw = true;
        state.error = error;
      }
      done();
    });

    fastify.addHook("onSend", (request, reply, payload, done) => {
      const state = running.get(request);
      if (!state) {
        // Fastify's own body limit answered first: answer as the other adapters do.
        if (reply.statusCode === 413 && rawBodies.get(request)?.tooLarge) {
          return done(null, rewrite(reply, engine.tooLarge()));
        }
        return done(null, payload);
      }
      running.delete(request);
      save(state, request, reply, payload).then((sent) => done(null, sent), done);
    });

    async function save(
      { lock, threw, error }: Running,
      request: FastifyRequest,
      reply: FastifyReply,
      payload: unknown,
    ): Promise<unknown> {
      const noEffect = isMarkedNoEffect(request, reply);
      let captured: Captured;
      try {
        captured = await capturePayload(payload, reply);
      } catch (readError) {
        // The handler's own error, when it threw, says what it did; the payload failed only afterwards.
        await lock.finish({ ...failed, error: threw ? error : readError, noEffect });
        throw readError;
      }
      const body = captured.bytes.byteLength <= lock.maxResponseBytes ? captured.bytes : undefined;
      await lock.finish({ status: captured.status, headers: captured.headers, body, threw, error, noEffect });
      return captured.payload;
    }

    // A response that bypassed `onSend` (an error handler that threw): the handler failed, and did what it did.
    fastify.addHook("onResponse", (request, reply, done) => {
      const state = running.get(request);
      if (!state) return done();
      running.delete(request);
      // `finish` never rejects.
      void state.lock
        .finish({ ...failed, error: state.error, noEffect: isMarkedNoEffect(request, reply) })
        .then(() => done());
    });
  }

  // What `fastify-plugin` sets: the hooks apply to the context that registers the plugin, not a child of it.
  Object.assign(idempotency, {
    [Symbol.for("skip-override")]: true,
    [Symbol.for("fastify.display-name")]: "idemkey-idempotency",
  });
  return Object.assign(idempotency, { purge: engine.purge });
}

/** What `finish` is told when no response came out of the handler: it threw, or its payload could not be read. */
const failed = { status: 500, headers: [], body: new Uint8Array(0), threw: true } as const;

/**
 * Records the chunks of the body as whoever reads the stream (Fastify's body reader, a custom parser, a later
 * `preParsing` stream) takes them: every chunk a Readable hands out, flowing or through `read()`, is emitted as
 * `data`. Watching `emit` leaves the stream as it was; a listener of our own would set it flowing before the parser
 * listens, and a `Transform` in between costs a stream and `pipeline()` (an `AbortController`) per request.
 */
function recordChunks(payload: Readable, limit: number): RawBody {
  const raw: RawBody = { chunks: [], total: 0, ended: false, tooLarge: false };
  const emit = payload.emit;
  payload.emit = function (this: Readable, event: string | symbol, ...args: unknown[]) {
    if (event === "data" && !raw.tooLarge) {
      // A stream given an encoding hands out strings; the bytes were UTF-8 unless a custom stream says otherwise.
      const chunk = typeof args[0] === "string" ? Buffer.from(args[0]) : (args[0] as Buffer);
      raw.total += chunk.byteLength;
      if (raw.total <= limit) raw.chunks.push(chunk);
      else {
        raw.tooLarge = true;
        raw.chunks = [];
      }
    } else if (event === "end") raw.ended = true;
    return emit.call(this, event, ...args);
  } as Readable["emit"];
  return raw;
}

function requestBody(request: FastifyRequest, raw: RawBody | undefined): RequestBody {
  if (raw?.tooLarge) return { tooLarge: true };
  if (raw?.ended) return { bytes: concat(raw.chunks, raw.total) };
  // A parser that did not read the stream (none ran: no body) leaves nothing copied.
  if (request.body !== undefined && request.body !== null) return { parsed: request.body };
  return { bytes: new Uint8Array(0) };
}

/** Turns the reply `onSend` is about to send into `response`. */
function rewrite(reply: FastifyReply, response: OwnerResponse): Buffer {
  reply.code(response.status);
  reply.removeHeader("content-length");
  for (const [name, value] of response.headers) reply.header(name, value);
  return Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength);
}

function send(reply: FastifyReply, response: OwnerResponse): FastifyReply {
  reply.code(response.status);
  const grouped = new Map<string, string[]>();
  for (const [name, value] of response.headers) grouped.set(name, [...(grouped.get(name) ?? []), value]);
  for (const [name, values] of grouped) reply.header(name, values.length === 1 ? values[0] : values);
  return reply.send(Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength));
}

interface Captured {
  bytes: Uint8Array;
  status: number;
  headers: [string, string][];
  /** What to send on: the same payload, or the bytes of a stream that had to be read. */
  payload: unknown;
}

async function capturePayload(payload: unknown, reply: FastifyReply): Promise<Captured> {
  const status = reply.statusCode;
  const headers = headerPairs(reply.getHeaders());
  if (payload === undefined || payload === null)
    return { bytes: new Uint8Array(0), status, headers, payload };
  if (typeof payload === "string") return { bytes: Buffer.from(payload), status, headers, payload };
  if (payload instanceof Uint8Array) return { bytes: payload, status, headers, payload };
  if (Object.prototype.toString.call(payload) === "[object Response]") {
    // Fastify sends a Fetch Response with its own status and headers.
    const response = payload as Response;
    const bytes = new Uint8Array(await response.clone().arrayBuffer());
    return { bytes, status: response.status, headers: [...headers, ...response.headers], payload };
  }
  const stream = payload as Readable | ReadableStream<Uint8Array>;
  const readable = "getReader" in stream ? Readable.fromWeb(stream as never) : stream;
  const chunks: Buffer[] = [];
  for await (const chunk of readable) chunks.push(Buffer.from(chunk as Uint8Array));
  const bytes = Buffer.concat(chunks);
  return { bytes, status, headers, payload: bytes };
}
