import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import express, { type NextFunction, type Request, type Response } from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { idempotency as expressIdempotency, keepRawBody, markNoEffect } from "../../src/express/index.js";
import { idempotency as fastifyIdempotency } from "../../src/fastify/index.js";
import { idempotency as honoIdempotency } from "../../src/hono/index.js";
import type { IdempotencyOptions } from "../../src/owner/options.js";

/**
 * The fake owner of the side effect, shared by the three apps: it keeps its own list of effects, so tests count
 * handler runs without asking the middleware.
 */
export interface Owner {
  readonly effects: { account: string; body: unknown }[];
  /** While set, the next handler takes it, calls `onEnter` and waits for it before it takes effect (see `hold`). */
  gate: Promise<void> | undefined;
  onEnter: (() => void) | undefined;
  /** How many of the next handler runs throw before taking effect. */
  throwNext: number;
  /** Whether the error thrown before the effect says so (`noEffect: true`). */
  throwNoEffect: boolean;
  /** How many of the next handler runs take effect and then throw. */
  throwAfterEffect: number;
  /** How many of the next handler runs answer 503 without taking effect, and say so with `markNoEffect`. */
  refuseNext: number;
  /** The HTTP status the thrown error carries (`status` and `statusCode`, which the frameworks' error handlers read). */
  throwStatus: number;
  /** The status the handler answers with. */
  status: number;
  /** Pads the response body to at least this many bytes. */
  padTo: number;
}

export function newOwner(): Owner {
  return {
    effects: [],
    gate: undefined,
    onEnter: undefined,
    throwNext: 0,
    throwNoEffect: false,
    throwAfterEffect: 0,
    refuseNext: 0,
    throwStatus: 500,
    status: 201,
    padTo: 0,
  };
}

/** Makes the next handler run wait until `open()`; `entered` resolves once it is waiting. */
export function hold(owner: Owner): { entered: Promise<void>; open: () => void } {
  let open!: () => void;
  owner.gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const entered = new Promise<void>((resolve) => {
    owner.onEnter = resolve;
  });
  return {
    entered,
    open,
  };
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The handler did nothing: the route calls `markNoEffect` with its framework's object. */
  noEffect?: boolean;
}

/** The handler behind every app: POST /charges takes effect once per run and answers 201 with the charge. */
async function charge(owner: Owner, account: string, body: unknown): Promise<Answer> {
  if (owner.throwNext > 0) {
    owner.throwNext--;
    const status = owner.throwStatus;
    const error = new Error("charge failed before taking effect");
    throw Object.assign(error, { status, statusCode: status }, owner.throwNoEffect ? { noEffect: true } : {});
  }
  if (owner.refuseNext > 0) {
    owner.refuseNext--;
    return { status: 503, headers: {}, body: "ledger unavailable, nothing was charged", noEffect: true };
  }
  const gate = owner.gate;
  if (gate) {
    owner.gate = undefined;
    owner.onEnter?.();
    await gate;
  }
  owner.effects.push({ account, body });
  if (owner.throwAfterEffect > 0) {
    owner.throwAfterEffect--;
    const status = owner.throwStatus;
    throw Object.assign(new Error("charge failed after taking effect"), { status, statusCode: status });
  }
  const id = `ch_${owner.effects.length}`;
  const payload = { id, account, body, padding: "x".repeat(owner.padTo) };
  return {
    status: owner.status,
    headers: { "content-type": "application/json", location: `/charges/${id}`, "x-not-kept": id },
    body: JSON.stringify(payload),
  };
}

const accountOf = (value: string | undefined) => value ?? "anonymous";

export interface TestRequest {
  method?: string;
  path?: string;
  /** A header sent more than once is given as an array (Hono sees it joined by a comma, as Fetch does). */
  headers?: Record<string, string | string[]>;
  body?: string;
  /** A body of this many zero bytes, made chunk by chunk as it is sent (never held whole), instead of `body`. */
  streamBytes?: number;
  /** Called for each chunk of `streamBytes` made, to sample memory while the body flows. */
  onChunk?: () => void;
}

const CHUNK = 64 * 1024;

/**
 * The chunks of a streamed test body: one zeroed buffer sent again and again, so that the test itself allocates
 * nothing (fresh chunks left 512 MiB of garbage for the collector, which showed in RSS). A server that buffers the
 * body still shows: over a socket (Express) every chunk arrives in a new buffer, and in process (Hono, Fastify)
 * reading the body whole means copying it into one.
 */
function* zeroChunks(request: TestRequest): Generator<Buffer> {
  const chunk = Buffer.alloc(CHUNK);
  for (let left = request.streamBytes ?? 0; left > 0; left -= CHUNK) {
    request.onChunk?.();
    yield left >= CHUNK ? chunk : chunk.subarray(0, left);
  }
}

export interface TestResponse {
  status: number;
  header(name: string): string | undefined;
  body: string;
}

export interface TestApp {
  request(request: TestRequest): Promise<TestResponse>;
  /** The middleware's own `purge`. */
  purge(options?: { batchSize?: number }): Promise<number>;
  close(): Promise<void>;
}

export type AppOptions = Omit<IdempotencyOptions<unknown>, "scope">;

export interface Framework {
  name: string;
  /** Whether the middleware can tell a thrown error from a response (Express cannot). */
  seesThrows: boolean;
  start(owner: Owner, options: AppOptions): Promise<TestApp>;
}

const defaults = (request: TestRequest) => ({
  method: request.method ?? "POST",
  path: request.path ?? "/charges",
  headers: { "content-type": "application/json", ...request.headers },
});

export const hono: Framework = {
  name: "hono",
  seesThrows: true,
  async start(owner, options) {
    const app = new Hono();
    const middleware = honoIdempotency({ ...options, scope: (c) => accountOf(c.req.header("x-account")) });
    app.use("*", middleware);
    app.onError((error, c) => c.text(error.message, ((error as { status?: number }).status ?? 500) as 500));
    app.post("/charges", async (c) => {
      const answer = await charge(owner, accountOf(c.req.header("x-account")), await c.req.json());
      if (answer.noEffect) markNoEffect(c);
      return c.body(answer.body, answer.status as 201, answer.headers);
    });
    app.get("/charges", (c) => c.json({ count: owner.effects.length }));
    return {
      purge: middleware.purge,
      async request(request) {
        const { method, path, headers } = defaults(request);
        const fetchHeaders = new Headers();
        for (const [name, value] of Object.entries(headers)) {
          for (const item of [value].flat()) fetchHeaders.append(name, item);
        }
        let body: ReadableStream<Uint8Array> | string | null = request.body ?? null;
        if (request.streamBytes !== undefined) {
          const chunks = zeroChunks(request);
          body = new ReadableStream<Uint8Array>({
            pull(controller) {
              const next = chunks.next();
              if (next.done) controller.close();
              else controller.enqueue(next.value);
            },
          });
        }
        const response = await app.request(path, {
          method,
          headers: fetchHeaders,
          body,
          ...(request.streamBytes === undefined ? {} : { duplex: "half" }),
        } as RequestInit);
        return {
          status: response.status,
          header: (name) => response.headers.get(name) ?? undefined,
          body: await response.text(),
        };
      },
      async close() {},
    };
  },
};

export const fastify: Framework = {
  name: "fastify",
  seesThrows: true,
  async start(owner, options) {
    const app = Fastify({ logger: false });
    const plugin = fastifyIdempotency({
      ...options,
      scope: (request) => accountOf(request.headers["x-account"] as string),
    });
    await app.register(plugin);
    app.post("/charges", async (request, reply) => {
      const answer = await charge(owner, accountOf(request.headers["x-account"] as string), request.body);
      if (answer.noEffect) markNoEffect(reply);
      reply.code(answer.status).headers(answer.headers);
      return answer.body;
    });
    app.get("/charges", async () => ({ count: owner.effects.length }));
    await app.ready();
    return {
      purge: plugin.purge,
      async request(request) {
        const { method, path, headers } = defaults(request);
        const response = await app.inject({
          method: method as "POST",
          url: path,
          headers,
          ...(request.streamBytes !== undefined
            ? { payload: Readable.from(zeroChunks(request)) }
            : request.body === undefined
              ? {}
              : { payload: request.body }),
        });
        return {
          status: response.statusCode,
          header: (name) => {
            const value = response.headers[name.toLowerCase()];
            return value === undefined ? undefined : [value].flat().join(", ");
          },
          body: response.body,
        };
      },
      close: () => app.close(),
    };
  },
};

export const expressFramework: Framework = {
  name: "express",
  seesThrows: false,
  async start(owner, options) {
    const app = express();
    app.use(express.json({ verify: keepRawBody }));
    const middleware = expressIdempotency({ ...options, scope: (req) => accountOf(req.get("x-account")) });
    app.use(middleware);
    app.post("/charges", async (req, res) => {
      const answer = await charge(owner, accountOf(req.get("x-account")), req.body);
      if (answer.noEffect) markNoEffect(res);
      res.status(answer.status).set(answer.headers).send(answer.body);
    });
    app.get("/charges", (_req, res) => {
      res.json({ count: owner.effects.length });
    });
    // Express shows middleware no thrown error: its error handler says "nothing happened" for the middleware.
    app.use(
      (
        error: Error & { status?: number; noEffect?: boolean },
        _req: Request,
        res: Response,
        _next: NextFunction,
      ) => {
        if (error.noEffect === true) markNoEffect(res);
        res.status(error.status ?? 500).send(error.message);
      },
    );
    const server = await listen(app);
    return {
      purge: middleware.purge,
      request: (request) => send(server, request),
      async close() {
        server.closeAllConnections();
        server.close();
        await once(server, "close");
      },
    };
  },
};

export const frameworks = [hono, expressFramework, fastify];

export async function listen(handler: http.RequestListener): Promise<http.Server> {
  const server = http.createServer(handler);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return server;
}

export function baseUrl(server: http.Server): string {
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

/** A real HTTP request with node:http, which sends a header given as an array as separate field lines. */
function send(server: http.Server, request: TestRequest): Promise<TestResponse> {
  const { method, path, headers } = defaults(request);
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({
          status: res.statusCode!,
          header: (name) => {
            const value = res.headers[name.toLowerCase()];
            return value === undefined ? undefined : [value].flat().join(", ");
          },
          body: Buffer.concat(chunks).toString("utf8"),
        }),
      );
      res.on("error", reject);
      // A streamed body still being sent when the answer came is not needed any more: stop making it, and drop
      // the connection once the answer is read.
      answered = true;
      if (request.streamBytes !== undefined) res.on("end", () => req.destroy());
    });
    let answered = false;
    req.on("error", (error) => {
      if (!req.destroyed || request.streamBytes === undefined) reject(error);
    });
    if (request.streamBytes === undefined) {
      req.end(request.body);
      return;
    }
    const chunks = zeroChunks(request);
    const pump = () => {
      for (;;) {
        if (answered || req.destroyed) return;
        const next = chunks.next();
        if (next.done) return void req.end();
        if (!req.write(next.value)) return void req.once("drain", pump);
      }
    };
    pump();
  });
}
