import { Readable } from "node:stream";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { idempotency as expressIdempotency } from "../../src/express/index.js";
import { idempotency as fastifyIdempotency } from "../../src/fastify/index.js";
import { idempotency as honoIdempotency } from "../../src/hono/index.js";
import { storeKey } from "../../src/owner/engine.js";
import { decodeSaved } from "../../src/owner/saved-response.js";
import { memoryStore } from "../../src/store/memory.js";
import { closedAfterTest } from "../support/close-server.js";
import { baseUrl, listen } from "./apps.js";

// What each adapter has to get right on its own: how its framework hands over bodies and responses.

const post = async (url: string, key: string, body: string, contentType = "application/json") => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "idempotency-key": key, "content-type": contentType },
    body,
  });
  return { status: response.status, headers: response.headers, body: await response.text() };
};

describe("idemkey/express", () => {
  it("reads the body itself when no parser ran, fingerprints the raw bytes, and leaves them on req.body", async () => {
    const seen: unknown[] = [];
    const app = express();
    app.use(expressIdempotency({ store: memoryStore(), scope: "single-tenant" }));
    app.post("/upload", (req, res) => {
      seen.push(req.body);
      res.status(201).send(`got ${(req.body as Buffer).length} bytes`);
    });
    const server = closedAfterTest(await listen(app));
    const url = `${baseUrl(server)}/upload`;
    expect((await post(url, "k", "a,b,c", "text/csv")).body).toBe("got 5 bytes");
    expect((await post(url, "k", "a,b,c", "text/csv")).headers.get("idempotent-replayed")).toBe("true");
    expect((await post(url, "k", "a,b,d", "text/csv")).status).toBe(422);
    expect(seen).toEqual([Buffer.from("a,b,c")]);
  });

  it("saves headers given to writeHead and a body written in chunks", async () => {
    let runs = 0;
    const app = express();
    app.use(express.json());
    app.use(expressIdempotency({ store: memoryStore(), scope: "single-tenant", keepHeaders: ["x-cost"] }));
    app.post("/report", (_req, res) => {
      runs++;
      res.writeHead(202, { location: "/reports/1", "content-type": "text/plain", "x-cost": "3" });
      res.write("part one, ");
      res.write(Buffer.from("part two, "));
      res.end("end", "utf8");
    });
    const server = closedAfterTest(await listen(app));
    const url = `${baseUrl(server)}/report`;
    const first = await post(url, "k", "{}");
    const replay = await post(url, "k", "{}");
    expect(first.body).toBe("part one, part two, end");
    expect(replay).toMatchObject({ status: 202, body: "part one, part two, end" });
    expect(replay.headers.get("location")).toBe("/reports/1");
    expect(replay.headers.get("x-cost")).toBe("3");
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(runs).toBe(1);
  });

  it("saves the kept headers only, under any case, from setHeader and writeHead, a repeated one in order", async () => {
    const store = memoryStore();
    const app = express();
    app.use(express.json());
    app.use(expressIdempotency({ store, scope: "single-tenant", keepHeaders: ["X-Cost"] }));
    app.post("/charges", (_req, res) => {
      res.setHeader("X-Cost", ["1", "2"]);
      res.setHeader("X-Trace", "t");
      res.writeHead(201, { "Content-Type": "text/plain", "X-Other": "o", Location: "/charges/1" });
      res.end("ok");
    });
    const server = closedAfterTest(await listen(app));
    expect((await post(`${baseUrl(server)}/charges`, "k", "{}")).status).toBe(201);
    // The record in the store, read past the middleware ("single-tenant" is the scope "").
    const saved = decodeSaved((await store.get(storeKey("", "k")))?.result ?? null);
    expect(saved.saved && saved.response.headers).toEqual([
      ["x-cost", "1"],
      ["x-cost", "2"],
      ["content-type", "text/plain"],
      ["location", "/charges/1"],
    ]);
  });
});

describe("idemkey/fastify", () => {
  it("saves a streamed reply and replays it; only the context it is registered in is covered", async () => {
    let runs = 0;
    const app = Fastify();
    await app.register(async (scoped) => {
      await scoped.register(fastifyIdempotency({ store: memoryStore(), scope: "single-tenant" }));
      scoped.post("/stream", async (_request, reply) => {
        runs++;
        reply.header("content-type", "text/plain");
        return reply.send(Readable.from(["chunk-1 ", "chunk-2"]));
      });
    });
    app.post("/elsewhere", async () => ({ ok: true }));
    const request = (url: string) =>
      app.inject({ method: "POST", url, headers: { "idempotency-key": "k" }, payload: { a: 1 } });
    const first = await request("/stream");
    const replay = await request("/stream");
    expect(first.body).toBe("chunk-1 chunk-2");
    expect(replay.body).toBe("chunk-1 chunk-2");
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(runs).toBe(1);
    expect((await app.inject({ method: "POST", url: "/elsewhere", payload: {} })).statusCode).toBe(200);
    await app.close();
  });

  it("still enforces the route's body limit", async () => {
    const app = Fastify({ bodyLimit: 100 });
    await app.register(fastifyIdempotency({ store: memoryStore(), scope: "single-tenant" }));
    app.post("/x", async () => ({ ok: true }));
    const response = await app.inject({
      method: "POST",
      url: "/x",
      headers: { "idempotency-key": "k", "content-type": "application/json" },
      payload: JSON.stringify({ pad: "x".repeat(500) }),
    });
    expect(response.statusCode).toBe(413);
    await app.close();
  });
});

describe("idemkey/hono", () => {
  it("fingerprints a body that an earlier middleware already read", async () => {
    let runs = 0;
    const app = new Hono();
    app.use("*", async (c, next) => {
      await c.req.json(); // as a validator does
      await next();
    });
    app.use("*", honoIdempotency({ store: memoryStore(), scope: "single-tenant" }));
    app.post("/x", async (c) => {
      runs++;
      return c.json(await c.req.json(), 201);
    });
    const request = (body: string) =>
      app.request("/x", {
        method: "POST",
        headers: { "idempotency-key": "k", "content-type": "application/json" },
        body,
      });
    expect((await request('{"a":1}')).status).toBe(201);
    expect((await request('{ "a": 1 }')).headers.get("idempotent-replayed")).toBe("true");
    expect((await request('{"a":2}')).status).toBe(422);
    expect(runs).toBe(1);
  });

  it("replays a 204 without a body", async () => {
    let runs = 0;
    const app = new Hono();
    app.use("*", honoIdempotency({ store: memoryStore(), scope: "single-tenant" }));
    app.patch("/x", (c) => {
      runs++;
      return c.body(null, 204);
    });
    const request = () => app.request("/x", { method: "PATCH", headers: { "idempotency-key": "k" } });
    expect((await request()).status).toBe(204);
    const replay = await request();
    expect(replay.status).toBe(204);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(runs).toBe(1);
  });
});
