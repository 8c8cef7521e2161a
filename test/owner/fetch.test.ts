import { once } from "node:events";
import type http from "node:http";
import { describe, expect, it } from "vitest";
import { HttpStatusError } from "../../src/errors/http-status-error.js";
import { IdempotencyConflictError } from "../../src/errors/idempotency-conflict-error.js";
import { NetworkError } from "../../src/errors/network-error.js";
import { createIdempotentFetch, idempotentFetch } from "../../src/fetch/index.js";
import { parseRetryAfter } from "../../src/fetch/retry-after.js";
import { closedAfterTest } from "../support/close-server.js";
import { rejection } from "../support/rejection.js";
import { baseUrl, listen } from "./apps.js";

interface Seen {
  method: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

type Reply = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A loopback server that records each request it reads, then answers with `reply`. */
async function owner(
  reply: Reply = (_req, res) => res.end("ok"),
): Promise<{ url: string; seen: Seen[]; server: http.Server }> {
  const seen: Seen[] = [];
  const server = await listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    seen.push({
      method: req.method!,
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      body: Buffer.concat(chunks).toString(),
    });
    reply(req, res);
  });
  closedAfterTest(server);
  return { url: `${baseUrl(server)}/charges`, seen, server };
}

const answer =
  (status: number, headers: Record<string, string> = {}, body = "") =>
  (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(status, headers).end(body);
  };

const ctx = { idempotencyKey: "3f2a9c", signal: new AbortController().signal };

describe("idempotentFetch", () => {
  it("sends the context's key as the draft's sf-string, once, over a key set by hand, and resolves a 2xx", async () => {
    const { url, seen } = await owner(answer(201, { "content-type": "application/json" }, '{"id":"ch_1"}'));
    const response = await idempotentFetch(
      url,
      { method: "POST", headers: { "Idempotency-Key": "chosen-by-the-model" } },
      ctx,
    );
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ id: "ch_1" });
    expect(seen[0]!.headers["idempotency-key"]).toBe('"3f2a9c"');
    expect(seen[0]!.rawHeaders.filter((h) => h.toLowerCase() === "idempotency-key")).toHaveLength(1);
  });

  it("escapes the sf-string, and sends the key bare when quoted is false", async () => {
    const { url, seen } = await owner();
    await idempotentFetch(url, { method: "POST" }, { idempotencyKey: 'a"b\\c' });
    await createIdempotentFetch({ quoted: false })(url, { method: "POST" }, ctx);
    expect(seen.map((s) => s.headers["idempotency-key"])).toEqual(['"a\\"b\\\\c"', "3f2a9c"]);
  });

  it("does not retry a 5xx or 409 that says x-should-retry: false", async () => {
    const replies = [
      answer(500, { "x-should-retry": "false" }, "final"),
      answer(409, { "x-should-retry": "false" }, "final"),
      answer(503, {}, "outage"),
    ];
    let n = 0;
    const { url } = await owner((req, res) => replies[n++]!(req, res));
    for (const retryable of [false, false, true]) {
      expect(await rejection(idempotentFetch(url, { method: "POST" }, ctx))).toMatchObject({ retryable });
    }
  });

  it("sends a plain object or array body as canonical JSON, and other bodies untouched", async () => {
    const { url, seen } = await owner();
    await idempotentFetch(url, { method: "POST", body: { b: [1, 2.5], a: "€" } }, ctx);
    await idempotentFetch(url, { method: "POST", body: [{ z: 1, y: 2 }] }, ctx);
    await idempotentFetch(
      url,
      { method: "POST", body: { b: 1, a: 2 }, headers: { "content-type": "application/merge-patch+json" } },
      ctx,
    );
    await idempotentFetch(url, { method: "POST", body: '{"b":1,  "a":2}' }, ctx);
    expect(seen.map((s) => [s.body, s.headers["content-type"]])).toEqual([
      ['{"a":"€","b":[1,2.5]}', "application/json"],
      ['[{"y":2,"z":1}]', "application/json"],
      ['{"a":2,"b":1}', "application/merge-patch+json"],
      ['{"b":1,  "a":2}', "text/plain;charset=UTF-8"],
    ]);
  });

  it("passes ctx.signal: an abort rejects with the abort, not a retryable error", async () => {
    const { url } = await owner(() => {
      // Never answers.
    });
    const controller = new AbortController();
    const pending = idempotentFetch(
      url,
      { method: "POST" },
      { idempotencyKey: "k", signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 20);
    const error = await rejection(pending);
    expect(error).not.toBeInstanceOf(NetworkError);
    expect((error as Error).name).toBe("AbortError");
  });

  it("makes a 409 retryable after its Retry-After, bounded by maxRetryAfterMs", async () => {
    const { url } = await owner(answer(409, { "retry-after": "3" }, '{"title":"in progress"}'));
    const error = (await rejection(idempotentFetch(url, { method: "POST" }, ctx))) as HttpStatusError;
    expect(error).toBeInstanceOf(HttpStatusError);
    expect(error).toMatchObject({ status: 409, retryable: true, retryAfterMs: 3000, noEffect: false });
    expect(error.body).toBe('{"title":"in progress"}');
    expect(error.message).toContain("in progress");

    const bounded = createIdempotentFetch({ maxRetryAfterMs: 1_500 });
    expect(await rejection(bounded(url, { method: "POST" }, ctx))).toMatchObject({ retryAfterMs: 1_500 });
  });

  it("turns a 422 into a non-retryable IdempotencyConflictError carrying the key and the answer", async () => {
    const { url } = await owner(
      answer(422, { "content-type": "application/problem+json" }, '{"status":422}'),
    );
    const error = (await rejection(
      idempotentFetch(url, { method: "POST" }, ctx),
    )) as IdempotencyConflictError;
    expect(error).toBeInstanceOf(IdempotencyConflictError);
    expect(error.retryable).toBe(false);
    expect(error.key).toBe("3f2a9c");
    expect(error.cause).toBeInstanceOf(HttpStatusError);
    expect((error.cause as HttpStatusError).status).toBe(422);
  });

  it("treats a replayed answer as final even when it is an error", async () => {
    const { url } = await owner(answer(500, { "idempotent-replayed": "true", "retry-after": "1" }));
    const error = await rejection(idempotentFetch(url, { method: "POST" }, ctx));
    expect(error).toMatchObject({ status: 500, retryable: false, replayed: true, noEffect: false });
  });

  it.each([
    [500, {}, { retryable: true, noEffect: false, retryAfterMs: undefined }],
    [503, { "retry-after": "2" }, { retryable: true, noEffect: false, retryAfterMs: 2000 }],
    [429, { "retry-after": "1" }, { retryable: true, noEffect: true, retryAfterMs: 1000 }],
    [400, {}, { retryable: false, noEffect: true }],
    [404, {}, { retryable: false, noEffect: true }],
  ])("classifies a %i answer", async (status, headers, expected) => {
    const { url } = await owner(answer(status, headers));
    const error = await rejection(idempotentFetch(url, { method: "POST" }, ctx));
    expect(error).toBeInstanceOf(HttpStatusError);
    expect(error).toMatchObject({ status, replayed: false, ...expected });
  });

  it("makes a refused connection retryable with noEffect: nothing was sent", async () => {
    const { url, server } = await owner();
    server.close();
    await once(server, "close");
    const error = (await rejection(idempotentFetch(url, { method: "POST" }, ctx))) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ code: "ECONNREFUSED", retryable: true, noEffect: true });
  });

  it("makes a connection lost after sending retryable, without noEffect: it may have taken effect", async () => {
    const { url, seen } = await owner((req) => req.socket.destroy());
    const error = (await rejection(
      idempotentFetch(url, { method: "POST", body: { a: 1 } }, ctx),
    )) as NetworkError;
    expect(seen).toHaveLength(1);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.retryable).toBe(true);
    expect(error.noEffect).toBe(false);
  });

  it("refuses a context without a usable key, and bad options, with a TypeError naming them", async () => {
    await expect(idempotentFetch("http://127.0.0.1:1/", {}, { idempotencyKey: "" })).rejects.toThrow(
      /ctx\.idempotencyKey/,
    );
    await expect(idempotentFetch("http://127.0.0.1:1/", {}, { idempotencyKey: "é" })).rejects.toThrow(
      TypeError,
    );
    expect(() => createIdempotentFetch({ quoted: "yes" as never })).toThrow(/options\.quoted/);
    expect(() => createIdempotentFetch({ maxRetryAfterMs: -1 })).toThrow(/options\.maxRetryAfterMs/);
    expect(() => createIdempotentFetch({ fetch: 1 as never })).toThrow(/options\.fetch/);
  });
});

describe("parseRetryAfter", () => {
  it("reads delay-seconds and HTTP-dates, bounded, and ignores what it cannot read", () => {
    const now = Date.parse("2025-01-01T00:00:00Z");
    expect(parseRetryAfter("5", 60_000, now)).toBe(5_000);
    expect(parseRetryAfter(" 0 ", 60_000, now)).toBe(0);
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:00:30 GMT", 60_000, now)).toBe(30_000);
    expect(parseRetryAfter("Tue, 31 Dec 2024 23:00:00 GMT", 60_000, now)).toBe(0);
    expect(parseRetryAfter("3600", 60_000, now)).toBe(60_000);
    expect(parseRetryAfter("soon", 60_000, now)).toBeUndefined();
    expect(parseRetryAfter("-1", 60_000, now)).toBeUndefined();
    expect(parseRetryAfter(null, 60_000, now)).toBeUndefined();
  });
});
