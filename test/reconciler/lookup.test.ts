import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { idempotency as expressIdempotency, keepRawBody } from "../../src/express/index.js";
import { idempotency as fastifyIdempotency } from "../../src/fastify/index.js";
import { lookupReconcile } from "../../src/fetch/index.js";
import { idempotency } from "../../src/hono/index.js";
import { memoryStore } from "../../src/store/memory.js";
import { baseUrl, listen } from "../owner/apps.js";

const LOOKUP = "/v1/idempotency-keys";
const KEY = "a".repeat(64);

/** An owner whose handler counts its effects in its own list, with a gate to hold one request in flight. */
function owner() {
  const effects: string[] = [];
  let gate: Promise<void> | undefined;
  let onEnter: (() => void) | undefined;
  const app = new Hono();
  app.use(
    "/v1/*",
    idempotency({ store: memoryStore(), scope: (c) => c.req.header("x-account") ?? "", lookup: LOOKUP }),
  );
  app.get("/v1/other", (c) => c.text("other"));
  app.post("/v1/charges", async (c) => {
    onEnter?.();
    if (gate) await gate;
    const body = await c.req.json();
    effects.push(c.req.header("x-account")!);
    return c.json({ charged: body.amount }, 201);
  });
  const charge = (account: string, key: string, amount = 5) =>
    app.request("/v1/charges", {
      method: "POST",
      headers: { "x-account": account, "idempotency-key": key, "content-type": "application/json" },
      body: JSON.stringify({ amount }),
    });
  const look = async (account: string, key: string) => {
    const response = await app.request(LOOKUP, {
      headers: { "x-account": account, "idempotency-key": key },
    });
    return {
      status: response.status,
      headers: [...response.headers.entries()],
      body: await response.text(),
    };
  };
  return {
    app,
    effects,
    charge,
    look,
    /** Holds the next handler at its gate; `entered` resolves once it waits there. */
    hold() {
      let open!: () => void;
      gate = new Promise<void>((resolve) => (open = resolve));
      const entered = new Promise<void>((resolve) => (onEnter = resolve));
      return {
        entered,
        open: () => {
          gate = undefined;
          onEnter = undefined;
          open();
        },
      };
    },
  };
}

describe("the owner's key lookup (option lookup)", () => {
  it("answers within the caller's scope: completed with the saved response, in flight, unknown", async () => {
    const o = owner();
    expect(JSON.parse((await o.look("acct-a", KEY)).body)).toEqual({ key: KEY, state: "unknown" });
    expect((await o.charge("acct-a", KEY)).status).toBe(201);
    const found = await o.look("acct-a", KEY);
    expect(found.status).toBe(200);
    expect(JSON.parse(found.body)).toEqual({
      key: KEY,
      state: "completed",
      status: 201,
      body: JSON.stringify({ charged: 5 }),
      contentType: "application/json",
    });
    expect(found.headers).toContainEqual(["cache-control", "no-store"]);

    const held = o.hold();
    const second = "b".repeat(64);
    const running = o.charge("acct-a", second);
    await held.entered;
    expect(JSON.parse((await o.look("acct-a", second)).body)).toEqual({ key: second, state: "in_flight" });
    expect(JSON.parse((await o.look("acct-b", second)).body)).toEqual({ key: second, state: "unknown" });
    held.open();
    expect((await running).status).toBe(201);
    // The lookup ran nothing: the effects are the two charges.
    expect(o.effects).toEqual(["acct-a", "acct-a"]);
  });

  it("a cross-caller lookup learns nothing: byte for byte the answer about a key nobody sent", async () => {
    const used = owner();
    const fresh = owner();
    expect((await used.charge("acct-a", KEY)).status).toBe(201);
    const acrossScope = await used.look("acct-b", KEY);
    const neverSent = await fresh.look("acct-b", KEY);
    expect(acrossScope).toEqual(neverSent);
    // Nor does it change anything for the key's owner, or run anything.
    expect(JSON.parse((await used.look("acct-a", KEY)).body).state).toBe("completed");
    expect(used.effects).toEqual(["acct-a"]);
  });

  it("refuses a lookup without a key, and leaves other GETs to the app", async () => {
    const o = owner();
    const bare = await o.app.request(LOOKUP, { headers: { "x-account": "a" } });
    expect(bare.status).toBe(400);
    expect(await (await o.app.request("/v1/other")).text()).toBe("other");
    expect(() => idempotency({ store: memoryStore(), scope: "single-tenant", lookup: "v1/keys" })).toThrow(
      /options\.lookup/,
    );
  });

  it("lookupReconcile asks it: completed is done with the response's JSON, unknown is not done", async () => {
    const o = owner();
    await o.charge("acct-a", KEY, 7);
    const reconcile = lookupReconcile<{ amount: number }, { charged: number }>({
      url: `http://owner${LOOKUP}`,
      headers: { "x-account": "acct-a" },
      fetch: async (input, init) => o.app.request(String(input), init),
    });
    const ctx = (key: string) => ({
      idempotencyKey: key,
      taskId: "t",
      tool: "charge",
      attempt: 1,
      signal: new AbortController().signal,
    });
    expect(await reconcile({ amount: 7 }, ctx(KEY))).toEqual({
      status: "done",
      result: { charged: 7 },
      evidence: { lookup: "completed", status: 201 },
    });
    expect(await reconcile({ amount: 7 }, ctx("c".repeat(64)))).toEqual({
      status: "not_done",
      evidence: { lookup: "unknown" },
    });
    // Another caller's credential reads the key as unknown: why the lookup must carry the call's own.
    const wrongScope = lookupReconcile({
      url: `http://owner${LOOKUP}`,
      headers: { "x-account": "acct-b" },
      fetch: async (input, init) => o.app.request(String(input), init),
    });
    expect(await wrongScope({}, ctx(KEY))).toMatchObject({ status: "not_done" });
  });

  it("Express, over a real listener: the same answers, scoped the same way", async () => {
    const effects: string[] = [];
    const app = express();
    app.use(express.json({ verify: keepRawBody }));
    app.use(
      expressIdempotency({
        store: memoryStore(),
        scope: (req) => req.get("x-account") ?? "",
        lookup: LOOKUP,
      }),
    );
    app.post("/v1/charges", (req, res) => {
      effects.push(req.get("x-account")!);
      res.status(201).json({ charged: req.body.amount });
    });
    const server = await listen(app);
    try {
      const url = baseUrl(server);
      const sent = await fetch(`${url}/v1/charges`, {
        method: "POST",
        headers: { "x-account": "acct-a", "idempotency-key": KEY, "content-type": "application/json" },
        body: JSON.stringify({ amount: 3 }),
      });
      expect(sent.status).toBe(201);
      const look = async (account: string) => {
        const r = await fetch(`${url}${LOOKUP}`, {
          headers: { "x-account": account, "idempotency-key": KEY },
        });
        return { status: r.status, body: await r.json() };
      };
      expect(await look("acct-a")).toEqual({
        status: 200,
        body: {
          key: KEY,
          state: "completed",
          status: 201,
          body: JSON.stringify({ charged: 3 }),
          contentType: "application/json; charset=utf-8",
        },
      });
      expect(await look("acct-b")).toEqual({ status: 200, body: { key: KEY, state: "unknown" } });
      expect(effects).toEqual(["acct-a"]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("Fastify: the same answers, with no route of the app's at the lookup path; a bare lookup is refused", async () => {
    const effects: string[] = [];
    const app = Fastify({ logger: false });
    await app.register(
      fastifyIdempotency({
        store: memoryStore(),
        scope: (request) => String(request.headers["x-account"] ?? ""),
        lookup: LOOKUP,
      }),
    );
    app.post("/v1/charges", async (request, reply) => {
      effects.push(String(request.headers["x-account"]));
      return reply.code(201).send({ charged: (request.body as { amount: number }).amount });
    });
    try {
      const sent = await app.inject({
        method: "POST",
        url: "/v1/charges",
        headers: { "x-account": "acct-a", "idempotency-key": KEY, "content-type": "application/json" },
        payload: JSON.stringify({ amount: 4 }),
      });
      expect(sent.statusCode).toBe(201);
      const look = async (account: string, key?: string) => {
        const r = await app.inject({
          method: "GET",
          url: LOOKUP,
          headers: { "x-account": account, ...(key === undefined ? {} : { "idempotency-key": key }) },
        });
        return { status: r.statusCode, type: r.headers["content-type"], body: r.json() };
      };
      expect(await look("acct-a", KEY)).toEqual({
        status: 200,
        type: "application/json",
        body: {
          key: KEY,
          state: "completed",
          status: 201,
          body: JSON.stringify({ charged: 4 }),
          contentType: "application/json; charset=utf-8",
        },
      });
      expect(await look("acct-b", KEY)).toEqual({
        status: 200,
        type: "application/json",
        body: { key: KEY, state: "unknown" },
      });
      const bare = await look("acct-a");
      expect(bare.status).toBe(400);
      expect(bare.type).toBe("application/problem+json");
      expect(effects).toEqual(["acct-a"]);
    } finally {
      await app.close();
    }
  });
});
