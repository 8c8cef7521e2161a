import { once } from "node:events";
import type { AddressInfo } from "node:net";
import type { Readable } from "node:stream";
import { type ServerType, serve } from "@hono/node-server";
import Fastify, { type FastifyInstance } from "fastify";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { idempotency as fastifyIdempotency } from "../../src/fastify/index.js";
import { idempotency as honoIdempotency } from "../../src/hono/index.js";
import { memoryStore } from "../../src/store/memory.js";

// The adapters' shortcuts around their frameworks' bodies: each answer behind idemkey is compared with the same
// handler's answer without it, and handler runs are counted by the handlers themselves.

describe("idemkey/hono on @hono/node-server", () => {
  let server: ServerType | undefined;
  afterEach(async () => {
    if (!server) return;
    const closed = once(server, "close");
    server.close();
    await closed;
    server = undefined;
  });

  const runs: string[] = [];
  const binary = new Uint8Array([0xff, 0xfe, 0x00, 0x80, 0x41]);

  async function start(): Promise<string> {
    runs.length = 0;
    const app = new Hono();
    const routes = (prefix: string) => {
      app.post(`${prefix}/json`, async (c) => {
        runs.push(`${prefix}/json`);
        const body = await c.req.json<Record<string, unknown>>();
        return c.json({ echoed: body, text: await c.req.text(), note: "café ☕" }, 201, { location: "/x/1" });
      });
      app.post(`${prefix}/text`, async (c) => {
        runs.push(`${prefix}/text`);
        return c.text(`[${await c.req.text()}]`);
      });
      app.post(`${prefix}/binary`, (c) => {
        runs.push(`${prefix}/binary`);
        return c.body(binary, 200, { "content-type": "application/octet-stream" });
      });
      app.post(`${prefix}/stream`, (c) => {
        runs.push(`${prefix}/stream`);
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode("part-1 "));
            controller.enqueue(new TextEncoder().encode("part-2"));
            controller.close();
          },
        });
        return c.body(stream, 202, { "content-type": "text/plain" });
      });
      app.post(`${prefix}/empty`, (c) => {
        runs.push(`${prefix}/empty`);
        return c.body(null, 204);
      });
    };
    app.use("/idem/*", honoIdempotency({ store: memoryStore(), scope: "single-tenant" }));
    routes("/bare");
    routes("/idem");
    const port = await new Promise<number>((resolve) => {
      server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) =>
        resolve(info.port),
      );
    });
    return `http://127.0.0.1:${port}`;
  }

  const post = async (url: string, body: string, key?: string, contentType = "application/json") => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": contentType, ...(key === undefined ? {} : { "idempotency-key": key }) },
      body,
    });
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      location: response.headers.get("location"),
      replayed: response.headers.get("idempotent-replayed"),
      bytes: new Uint8Array(await response.arrayBuffer()),
    };
  };

  it.each([
    ["a c.json() answer", "/json", '{"amount":1999,"who":"zoë"}', "application/json"],
    ["a c.text() answer", "/text", "\uFEFFhello wörld", "text/plain"],
    ["a c.body() of bytes that are not UTF-8", "/binary", "{}", "application/json"],
    ["a streamed answer", "/stream", "{}", "application/json"],
    ["a 204 without a body", "/empty", "{}", "application/json"],
  ])(
    "answers %s as the bare handler does, saves it, and replays it byte for byte",
    async (_name, path, body, type) => {
      const url = await start();
      const bare = await post(`${url}/bare${path}`, body, undefined, type);
      const first = await post(`${url}/idem${path}`, body, "k", type);
      const replay = await post(`${url}/idem${path}`, body, "k", type);
      expect(first).toEqual({ ...bare, replayed: null });
      expect(replay).toEqual({ ...bare, replayed: "true" });
      expect(runs).toEqual([`/bare${path}`, `/idem${path}`]);
      expect((await post(`${url}/idem${path}`, `${body} `, "k", "application/octet-stream")).status).toBe(
        422,
      );
      expect(runs).toHaveLength(2);
    },
  );

  it("reads a body sent without a Content-Length (chunked) as one with it: same fingerprint, one run", async () => {
    const url = await start();
    const chunked = (text: string) =>
      fetch(`${url}/idem/json`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": "chunked" },
        body: new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(text.slice(0, 5)));
            controller.enqueue(new TextEncoder().encode(text.slice(5)));
            controller.close();
          },
        }),
        duplex: "half",
      } as RequestInit);
    const first = await chunked('{"amount":1999,"who":"zoë"}');
    expect(first.status).toBe(201);
    // The same request with a declared length replays what the chunked one saved.
    const replay = await post(`${url}/idem/json`, '{"who":"zoë","amount":1999}', "chunked");
    expect(replay.replayed).toBe("true");
    expect(new TextDecoder().decode(replay.bytes)).toBe(await first.text());
    expect(runs).toEqual(["/idem/json"]);
  });
});

describe("idemkey/fastify: the body is fingerprinted however it is read", () => {
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  const collect = (payload: Readable, done: (error: Error | null, body?: unknown) => void) => {
    let text = "";
    payload.on("data", (chunk: Buffer | string) => {
      text += String(chunk);
    });
    payload.on("end", () => done(null, { text }));
    payload.on("error", done);
  };

  const readers: Record<string, (app: FastifyInstance) => void> = {
    // The pattern of Fastify's documentation: a `data` listener and no `resume()`.
    "a custom parser listening for data": (app) => {
      app.addContentTypeParser("text/csv", (_request, payload, done) => collect(payload, done));
    },
    "a custom parser reading with for await": (app) => {
      app.addContentTypeParser("text/csv", async (_request: unknown, payload: Readable) => {
        let text = "";
        for await (const chunk of payload) text += String(chunk);
        return { text };
      });
    },
    "an earlier preParsing hook that sets an encoding": (app) => {
      app.addHook("preParsing", async (_request, _reply, payload) => payload.setEncoding("utf8"));
      app.addContentTypeParser("text/csv", { parseAs: "string" }, (_request, body, done) =>
        done(null, { text: body }),
      );
    },
  };

  it.each(Object.keys(readers))("%s", async (reader) => {
    const bodies: unknown[] = [];
    app = Fastify();
    readers[reader]!(app);
    await app.register(fastifyIdempotency({ store: memoryStore(), scope: "single-tenant" }));
    app.post("/import", async (request, reply) => {
      bodies.push(request.body);
      reply.code(201);
      return { rows: (request.body as { text: string }).text.split("\n").length };
    });
    const send = (payload: string) =>
      app!.inject({
        method: "POST",
        url: "/import",
        headers: { "idempotency-key": "k", "content-type": "text/csv" },
        payload,
      });
    const csv = "a,b\n1,ü\n2,3";
    const first = await send(csv);
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual({ rows: 3 });
    const replay = await send(csv);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(replay.body).toBe(first.body);
    expect((await send(`${csv}\n4,5`)).statusCode).toBe(422);
    expect(bodies).toEqual([{ text: csv }]);
  });
});
