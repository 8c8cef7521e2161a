import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { NetworkError } from "../../src/errors/network-error.js";
import { createIdempotentFetch, idempotentFetch } from "../../src/fetch/index.js";
import { isFinal } from "../../src/harness/retry.js";
import { createHarness, defineTool } from "../../src/index.js";
import { closedAfterTest } from "../support/close-server.js";
import { rejection } from "../support/rejection.js";

/**
 * `fetch`'s failure to get an answer, as each runtime throws it. Node (undici), Bun and Deno all throw a TypeError,
 * as they do for a bad URL, but each says "network" differently; a lost reply must stay retryable with the same key
 * (the harness, a durable engine's step), and a bad URL must not. The shapes below were measured on Node 20.19,
 * Bun 1.4.5 and Deno 2.9.6 (a loopback server that reads the request and destroys the socket; a closed port; a name
 * that does not resolve; "nota url"). This file also runs on the Bun and Deno legs (test/runtimes/vitest.config.ts),
 * where the live cases below get that runtime's own errors.
 */
const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });
const MEASURED_NETWORK_FAILURES: [string, () => TypeError][] = [
  [
    "Node: the socket closed after sending",
    () => new TypeError("fetch failed", { cause: withCode("other side closed", "UND_ERR_SOCKET") }),
  ],
  [
    "Node: refused",
    () =>
      new TypeError("fetch failed", { cause: withCode("connect ECONNREFUSED 127.0.0.1:1", "ECONNREFUSED") }),
  ],
  [
    "Bun: the socket closed after sending",
    () =>
      Object.assign(new TypeError("ECONNRESET: The socket connection was closed unexpectedly."), {
        code: "ECONNRESET",
        errno: 0,
      }),
  ],
  [
    "Bun: refused",
    () =>
      Object.assign(
        new TypeError("ECONNREFUSED: Unable to connect. Is the computer able to access the url?"),
        {
          code: "ECONNREFUSED",
          errno: 0,
        },
      ),
  ],
  [
    "Deno: the socket closed after sending",
    () =>
      new TypeError("fetch failed", {
        cause: new Error(
          "error sending request for url (http://127.0.0.1:41931/x): client error (SendRequest): connection closed before message completed",
        ),
      }),
  ],
  [
    "Deno: refused",
    () =>
      new TypeError("fetch failed", {
        cause: new Error(
          "error sending request for url (http://127.0.0.1:38639/x): client error (Connect): tcp connect error: Connection refused (os error 111)",
        ),
      }),
  ],
];
const MEASURED_BAD_URLS: [string, () => TypeError][] = [
  [
    "Node",
    () =>
      new TypeError("Failed to parse URL from nota url", {
        cause: Object.assign(new TypeError("Invalid URL"), { code: "ERR_INVALID_URL", input: "nota url" }),
      }),
  ],
  ["Bun", () => Object.assign(new TypeError("fetch() URL is invalid"), { code: "ERR_INVALID_URL" })],
  ["Deno", () => new TypeError("Invalid URL: 'nota url'")],
];

const ctx = { idempotencyKey: "3f2a9c" };

/**
 * A payments API on loopback that dedupes on the Idempotency-Key header: its own list holds one entry a charge made.
 * It cuts the socket instead of its first reply (the charge is made, the reply is lost).
 */
async function losingFirstReply() {
  const charges: string[] = [];
  let requests = 0;
  const server = http.createServer(async (req, res) => {
    for await (const _ of req);
    requests += 1;
    const key = String(req.headers["idempotency-key"]);
    if (!charges.includes(key)) charges.push(key);
    if (requests === 1) return void req.socket.destroy();
    res.end(JSON.stringify({ charges: charges.length }));
  });
  closedAfterTest(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, charges, requests: () => requests };
}

/** A loopback URL on which nothing listens: the port was bound, then freed. */
async function closedPort(): Promise<string> {
  const free = http.createServer();
  free.listen(0, "127.0.0.1");
  await once(free, "listening");
  const { port } = free.address() as AddressInfo;
  free.close();
  await once(free, "close");
  return `http://127.0.0.1:${port}`;
}

describe("fetch's network failure on Node, Bun and Deno", () => {
  it.each(MEASURED_NETWORK_FAILURES)("is retryable with the same key (%s)", (_, make) => {
    expect(isFinal(make())).toBe(false);
  });

  it.each(MEASURED_BAD_URLS)("a bad URL is final: no retry can fix it (%s)", (_, make) => {
    expect(isFinal(make())).toBe(true);
  });

  it.each(MEASURED_NETWORK_FAILURES)(
    "idempotentFetch makes it a retryable NetworkError (%s)",
    async (what, make) => {
      const error = (await rejection(
        createIdempotentFetch({ fetch: () => Promise.reject(make()) })("http://127.0.0.1/x", {}, ctx),
      )) as NetworkError;
      expect(error).toBeInstanceOf(NetworkError);
      expect(error.retryable).toBe(true);
      // Refused: the request cannot have been sent. Closed after sending: it may have taken effect.
      expect(error.noEffect).toBe(what.endsWith("refused"));
    },
  );

  it.each(MEASURED_BAD_URLS)(
    "idempotentFetch passes a bad URL on as the TypeError it is (%s)",
    async (_, make) => {
      const thrown = make();
      const error = await rejection(
        createIdempotentFetch({ fetch: () => Promise.reject(thrown) })("http://127.0.0.1/x", {}, ctx),
      );
      expect(error).toBe(thrown);
    },
  );

  it("this runtime's own lost reply: the harness retries with the same key, and the owner charges once", async () => {
    const api = await losingFirstReply();
    let attempts = 0;
    const charge = defineTool({
      name: "charge",
      effect: "keyed",
      run: async (_args: { amount: number }, tool) => {
        attempts += 1;
        const res = await fetch(`${api.url}/charges`, {
          method: "POST",
          headers: { "idempotency-key": tool.idempotencyKey },
          body: "{}",
        });
        return (await res.json()) as { charges: number };
      },
    });
    const harness = createHarness({ retry: { minDelayMs: 1 } });
    expect(await harness.call("order-1042", charge, { amount: 1999 })).toEqual({ charges: 1 });
    expect(attempts).toBe(2);
    expect(api.requests()).toBe(2);
    expect(api.charges).toEqual([harness.key("order-1042", charge, { amount: 1999 })]);
  });

  it("this runtime's own lost reply through idempotentFetch: a NetworkError that may have taken effect", async () => {
    const api = await losingFirstReply();
    const error = (await rejection(
      idempotentFetch(`${api.url}/charges`, { method: "POST" }, ctx),
    )) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ retryable: true, noEffect: false });
    // Quoted, as idempotentFetch sends the key by default.
    expect(api.charges).toEqual(['"3f2a9c"']);
  });

  it("this runtime's own refused connection through idempotentFetch: a NetworkError that was never sent", async () => {
    const error = (await rejection(
      idempotentFetch(`${await closedPort()}/charges`, { method: "POST" }, ctx),
    )) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ retryable: true, noEffect: true });
  });

  it("this runtime's own bad URL: thrown as it is, and final", async () => {
    const error = await rejection(fetch("nota url"));
    expect(error).toBeInstanceOf(TypeError);
    expect(isFinal(error)).toBe(true);
    expect(await rejection(idempotentFetch("nota url", { method: "POST" }, ctx))).toBeInstanceOf(TypeError);
  });
});
