import { once } from "node:events";
import type http from "node:http";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { idempotency as expressIdempotency } from "../../src/express/index.js";
import { idempotency as fastifyIdempotency } from "../../src/fastify/index.js";
import { idempotency as honoIdempotency } from "../../src/hono/index.js";
import type { IdempotencyOptions } from "../../src/owner/options.js";
import { memoryStore } from "../../src/store/memory.js";
import {
  type AppOptions,
  baseUrl,
  frameworks,
  hold,
  listen,
  newOwner,
  type Owner,
  type TestApp,
  type TestResponse,
} from "./apps.js";

// The cases of issue 12, each through every framework's real request path, effects counted by the handler's own
// list. The apps name the caller by `x-account` (their `scope`), and Express keeps raw bytes (`keepRawBody`).

const MiB = 1024 * 1024;

const problemOf = (response: TestResponse) => {
  expect(response.header("content-type")).toMatch(/^application\/problem\+json/);
  return JSON.parse(response.body) as { type: string; status: number; detail: string };
};

const keyed = (key: string, body: string, account?: string) => ({
  headers: { "idempotency-key": key, ...(account === undefined ? {} : { "x-account": account }) },
  body,
});

for (const framework of frameworks) {
  describe(`issue 12 on ${framework.name}`, () => {
    let app: TestApp | undefined;
    afterEach(async () => {
      await app?.close();
      app = undefined;
    });

    const start = async (options: Partial<AppOptions> = {}): Promise<{ app: TestApp; owner: Owner }> => {
      const owner = newOwner();
      app = await framework.start(owner, { store: memoryStore(), onError: () => {}, ...options });
      return { app, owner };
    };

    // 1. Unbounded body reads.
    it.each([
      ["declared by Content-Length", true],
      ["chunked, counted as it arrives", false],
    ])(
      "answers 413 to a 512 MiB keyed body %s, within 50 MiB of RSS, without claiming the key",
      async (_name, declared) => {
        const { app, owner } = await start();
        const size = 512 * MiB;
        const before = process.memoryUsage.rss();
        let peak = before;
        const sample = () => {
          peak = Math.max(peak, process.memoryUsage.rss());
        };
        // Without a declared length Fastify answers 415 to a type it has no parser for before any hook reads the
        // body, so its chunked case sends JSON, which its parser reads up to its own limit.
        const type =
          !declared && framework.name === "fastify" ? "application/json" : "application/octet-stream";
        const response = await app.request({
          headers: {
            "idempotency-key": "big",
            "content-type": type,
            ...(declared ? { "content-length": String(size) } : { "transfer-encoding": "chunked" }),
          },
          streamBytes: size,
          onChunk: sample,
        });
        sample();
        expect(response.status).toBe(413);
        expect(problemOf(response).type).toBe("https://idemkey.dev/problems/body-too-large");
        expect(response.header("x-should-retry")).toBe("false");
        expect(owner.effects).toHaveLength(0);
        expect(peak - before).toBeLessThan(50 * MiB);
        // The key was not claimed: the same key with a body that fits runs the handler.
        const small = await app.request(keyed("big", '{"amount":1}'));
        expect(small.status).toBe(201);
        expect(owner.effects).toHaveLength(1);
      },
    );

    it("reads a keyed body up to maxBodyBytes, and answers 413 one byte past it", async () => {
      const { app, owner } = await start({ maxBodyBytes: 64 });
      const fits = `{"note":"${"x".repeat(64 - 11)}"}`;
      expect(Buffer.byteLength(fits)).toBe(64);
      expect((await app.request(keyed("k1", fits))).status).toBe(201);
      const over = await app.request(keyed("k2", `{"note":"${"x".repeat(64 - 10)}"}`));
      expect(over.status).toBe(413);
      expect(owner.effects).toHaveLength(1);
    });

    // 2. Another caller's response, by default.
    it("keeps caller B out of caller A's key: no replay of A's response, and A's key is not blocked", async () => {
      const { app, owner } = await start();
      const body = '{"ship_to":"12 Rue de A"}';
      const alice = await app.request(keyed("k", body, "alice"));
      expect(alice.status).toBe(201);
      const bob = await app.request(keyed("k", body, "bob"));
      expect(bob.header("idempotent-replayed")).toBeUndefined();
      expect(JSON.parse(bob.body).account).toBe("bob");
      const bobOther = await app.request(keyed("k", '{"ship_to":"elsewhere"}', "mallory"));
      expect(bobOther.status).toBe(201);
      const aliceRetry = await app.request(keyed("k", body, "alice"));
      expect(aliceRetry.header("idempotent-replayed")).toBe("true");
      expect(aliceRetry.body).toBe(alice.body);
      expect(owner.effects.map((e) => e.account)).toEqual(["alice", "bob", "mallory"]);
    });

    // 3. Fingerprints that collapse different requests.
    it("never replays one JSON value for another: large integers stay apart, duplicate names get a 400", async () => {
      const { app, owner } = await start();
      expect((await app.request(keyed("n", '{"account":9007199254740992}'))).status).toBe(201);
      const other = await app.request(keyed("n", '{"account":9007199254740993}'));
      expect(other.status).toBe(422);
      expect(other.header("x-should-retry")).toBe("false");
      // Member order and whitespace still make no difference.
      const same = await app.request(keyed("m", '{"a":1,"b":2}'));
      expect((await app.request(keyed("m", '{ "b" : 2, "a" : 1.0 }'))).header("idempotent-replayed")).toBe(
        "true",
      );
      expect(same.status).toBe(201);

      const twice = await app.request(keyed("d", '{"amount":1,"amount":1000}'));
      expect(twice.status).toBe(400);
      expect(problemOf(twice).type).toBe("https://idemkey.dev/problems/body-invalid");
      expect(problemOf(twice).detail).toMatch(/"amount" appears twice/);
      expect(owner.effects).toHaveLength(2);
      // Refused before the claim: the key is free for a body with one value.
      expect((await app.request(keyed("d", '{"amount":1}'))).status).toBe(201);
      expect(owner.effects).toHaveLength(3);
    });

    // 4. 500 where a 4xx belongs.
    it.each([
      ["a lone surrogate", String.raw`{"a":"\ud800"}`],
      ["an array nested 5,000 deep", `{"a":${"[".repeat(5000)}${"]".repeat(5000)}}`],
      ["JSON that does not parse", '{"a":'],
    ])("answers 400 to a keyed body with %s, never a 500", async (name, body) => {
      const { app, owner } = await start();
      const response = await app.request(keyed("bad", body));
      expect(response.status).toBe(400);
      expect(owner.effects).toHaveLength(0);
      // Express's and Fastify's own parsers refuse it first, in their own format.
      if (name.startsWith("JSON that") && framework.name !== "hono") return;
      expect(problemOf(response).type).toBe("https://idemkey.dev/problems/body-invalid");
      expect(owner.effects).toHaveLength(0);
    });

    // 5. Retries of a final answer.
    it("marks final answers x-should-retry: false, and those a retry can get past x-should-retry: true", async () => {
      const { app, owner } = await start({ maxResponseBytes: 1024 });
      await app.request(keyed("r", '{"amount":1}'));
      const replay = await app.request(keyed("r", '{"amount":1}'));
      expect(replay.header("idempotent-replayed")).toBe("true");
      expect(replay.header("x-should-retry")).toBe("false");

      owner.padTo = 2048;
      expect((await app.request(keyed("big-answer", '{"amount":2}'))).status).toBe(201);
      const notSaved = await app.request(keyed("big-answer", '{"amount":2}'));
      expect(notSaved.status).toBe(500);
      expect(problemOf(notSaved).type).toBe("https://idemkey.dev/problems/response-not-saved");
      expect(notSaved.header("x-should-retry")).toBe("false");
      expect((await app.request({ headers: {}, body: "{}" })).header("x-should-retry")).toBe("false");
      expect(owner.effects).toHaveLength(2);

      // In flight: the same request with the same key gets past it, so the client should retry.
      const gate = hold(owner);
      const first = app.request(keyed("busy", '{"amount":3}'));
      await gate.entered;
      const busy = await app.request(keyed("busy", '{"amount":3}'));
      expect(busy.status).toBe(409);
      expect(busy.header("x-should-retry")).toBe("true");
      gate.open();
      expect((await first).status).toBe(201);
    });

    // 6. Draft details.
    it("points problems at the service's own docs: a configurable type base and a Link", async () => {
      const { app } = await start({
        problemTypeBase: "https://api.example.test/errors/",
        docsUrl: "https://api.example.test/docs/idempotency",
      });
      const missing = await app.request({ headers: {}, body: "{}" });
      expect(missing.status).toBe(400);
      expect(problemOf(missing).type).toBe("https://api.example.test/errors/key-missing");
      expect(missing.header("link")).toBe('<https://api.example.test/docs/idempotency>; rel="describedby"');
    });
  });
}

describe("scope is a visible choice", () => {
  const factories: [string, (options: IdempotencyOptions<never>) => unknown][] = [
    ["hono", honoIdempotency as never],
    ["express", expressIdempotency as never],
    ["fastify", fastifyIdempotency as never],
  ];
  it.each(factories)(
    '%s refuses options without scope, naming it, and takes "single-tenant"',
    (_name, make) => {
      const store = memoryStore();
      expect(() => make({ store } as never)).toThrow(TypeError);
      expect(() => make({ store } as never)).toThrow(/options\.scope is required.*"single-tenant"/);
      expect(() => make({ store, scope: "global" } as never)).toThrow(/options\.scope/);
      expect(() => make({ store, scope: "single-tenant" })).not.toThrow();
    },
  );
});

describe("Express without keepRawBody: the parsed body gets the same answers", () => {
  let server: http.Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    server?.close();
    if (server) await once(server, "close");
    server = undefined;
  });

  it.each([
    ["a lone surrogate", String.raw`{"a":"\ud800"}`],
    ["an array nested 5,000 deep", `{"a":${"[".repeat(5000)}${"]".repeat(5000)}}`],
    ["a member named twice, of which the parser kept one", '{"a":1,"a":1}'],
  ])("answers %s with a 4xx problem, never a 500", async (name, body) => {
    const effects: unknown[] = [];
    const app = express();
    app.use(express.json());
    app.use(expressIdempotency({ store: memoryStore(), scope: "single-tenant" }));
    app.post("/charges", (req, res) => {
      effects.push(req.body);
      res.status(201).json({ ok: true });
    });
    server = await listen(app);
    const response = await fetch(`${baseUrl(server)}/charges`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": "k" },
      body,
    });
    if (name.startsWith("a member named twice")) {
      // JSON.parse kept the last value: with the text gone there is nothing to refuse, and the value is exact.
      expect(response.status).toBe(201);
      return;
    }
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(((await response.json()) as { type: string }).type).toBe(
      "https://idemkey.dev/problems/body-invalid",
    );
    expect(effects).toHaveLength(0);
  });
});
