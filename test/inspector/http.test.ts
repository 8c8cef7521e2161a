import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import {
  ApprovalDeniedError,
  createHarness,
  defineTool,
  type Harness,
  memoryStore,
  OutcomeUnknownError,
  type Store,
  WaitTimeoutError,
} from "../../src/index.js";
import type { InspectorOptions } from "../../src/inspector/index.js";
import { type Client, events, problem, serve, slug } from "./support.js";

/**
 * The inspector's HTTP layer in-process: a real node:http listener on port 0, reached with fetch, over a memory
 * store filled through the harness. Effects are counted in `effects`, written by the tools themselves.
 */

const SECRET_CARD = "4242424242424242";
const SECRET_KEY = "sk_live_abcdef";
const SECRET_PASSWORD = "hunter2-secret-pw";

interface World {
  store: Store;
  harness: Harness;
  effects: { tool: string; key: string }[];
  tools: ReturnType<typeof makeTools>;
  /** Moves the inspector's clock on, so its next read of the ledger is fresh. */
  tick(): void;
  clock: () => number;
}

function makeTools(effects: World["effects"]) {
  let emailFailures = 1;
  return {
    charge: defineTool({
      name: "createCharge",
      effect: "keyed",
      run: (args: { customer: string; cardNumber: string; auth: { apiKey: string }[] }, ctx) => {
        effects.push({ tool: "createCharge", key: ctx.idempotencyKey });
        return { id: `ch_${args.customer}`, login: { password: SECRET_PASSWORD, user: "ops" } };
      },
    }),
    deploy: defineTool({
      name: "deploy",
      effect: "keyed",
      requiresApproval: true,
      run: (args: { service: string }, ctx) => {
        effects.push({ tool: "deploy", key: ctx.idempotencyKey });
        return { deployed: args.service };
      },
    }),
    email: defineTool({
      name: "sendEmail",
      effect: "unguarded",
      run: (args: { to: string }, ctx) => {
        if (emailFailures-- > 0) throw new Error("socket hang up"); // ambiguous: it may have been sent
        effects.push({ tool: "sendEmail", key: ctx.idempotencyKey });
        return { sent: args.to };
      },
    }),
  };
}

function world(): World {
  let skew = 0;
  const clock = () => Date.now() + skew;
  const store = memoryStore({ clock });
  const effects: World["effects"] = [];
  const harness = createHarness({
    store,
    clock,
    retry: { retries: 0 },
    approvalTimeoutMs: 0,
    wait: { minDelayMs: 2, maxDelayMs: 10 },
  });
  return { store, harness, effects, tools: makeTools(effects), clock, tick: () => (skew += 1_000) };
}

/** Two tasks: a completed charge, a deploy parked for approval and an email whose outcome is unknown. */
async function fill(w: World) {
  const { harness, tools } = w;
  const chargeArgs = { customer: "cus_1", cardNumber: SECRET_CARD, auth: [{ apiKey: SECRET_KEY }] };
  await harness.call("task-a", tools.charge, chargeArgs);
  await expect(harness.call("task-a", tools.deploy, { service: "api" })).rejects.toBeInstanceOf(
    WaitTimeoutError,
  );
  await expect(harness.call("task-b", tools.email, { to: "ops@acme.test" })).rejects.toBeInstanceOf(
    OutcomeUnknownError,
  );
  await harness.call("task-b", tools.charge, { customer: "cus_2", cardNumber: SECRET_CARD, auth: [] });
  return {
    charge: harness.key("task-a", tools.charge, chargeArgs),
    deploy: harness.key("task-a", tools.deploy, { service: "api" }),
    email: harness.key("task-b", tools.email, { to: "ops@acme.test" }),
  };
}

let client: Client | undefined;
afterEach(async () => {
  await client?.close();
  client = undefined;
});

async function setup(options: Partial<InspectorOptions> = {}) {
  const w = world();
  const keys = await fill(w);
  client = await serve({ store: w.store, clock: w.clock, user: "os-user", pollMs: 50, ...options });
  return { w, keys, c: client };
}

describe("the page", () => {
  it("serves the HTML, script and styles from the inspector itself, under a strict CSP", async () => {
    const { c } = await setup();
    const page = await c.get("/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    const html = await page.text();
    expect(html).toContain('<script src="/app.js"');
    // Nothing but its own origin: no CDN, no remote font, no framework.
    expect(html).not.toMatch(/https?:\/\//);
    const js = await c.get("/app.js");
    expect(js.headers.get("content-type")).toMatch(/^text\/javascript/);
    const script = await js.text();
    expect(script).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    expect(script).not.toContain("innerHTML");
    expect((await c.get("/app.css")).status).toBe(200);
    const missing = await c.get("/nope");
    expect(missing.status).toBe(404);
    expect(slug(await problem(missing))).toBe("not-found");
  });
});

describe("data endpoints", () => {
  it("/api/config says what the page needs", async () => {
    const { c } = await setup({ label: "sqlite:./x.db" });
    expect(await c.json("/api/config", "/api/config")).toMatchObject({
      label: "sqlite:./x.db",
      readOnly: false,
      user: "os-user",
      tokenHeader: "x-idemkey-token",
      redact: expect.arrayContaining(["cardNumber", "apiKey", "password"]),
    });
  });

  it("/api/counts counts the calls per state, with the tools seen", async () => {
    const { c } = await setup();
    const body = await c.json("/api/counts", "/api/counts");
    expect(body).toMatchObject({
      counts: { completed: 2, awaiting_approval: 1, outcome_unknown: 1, pending: 0, approved: 0, denied: 0 },
      total: 4,
      unreadable: 0,
      truncated: false,
      tools: ["createCharge", "deploy", "sendEmail"],
    });
  });

  it("/api/calls lists the calls, newest first, filtered by task, tool and state, and paged", async () => {
    const { c, keys } = await setup();
    const all = await c.json("/api/calls", "/api/calls");
    expect(all.total).toBe(4);
    expect(all.calls).toHaveLength(4);
    const createdAt = all.calls.map((x: { createdAt: number }) => x.createdAt);
    expect([...createdAt].sort((a, b) => b - a)).toEqual(createdAt);
    const parked = all.calls.find((x: { key: string }) => x.key === keys.deploy);
    expect(parked).toMatchObject({
      taskId: "task-a",
      tool: "deploy",
      effect: "keyed",
      state: "awaiting_approval",
      attempts: 0,
      holder: null,
      lastEvent: { type: "approval_requested" },
    });
    // The list never carries arguments or results.
    expect(JSON.stringify(all)).not.toContain(SECRET_CARD);

    const byTask = await c.json("/api/calls", "/api/calls?task=task-b");
    expect(byTask.calls.map((x: { taskId: string }) => x.taskId)).toEqual(["task-b", "task-b"]);
    const byTool = await c.json("/api/calls", "/api/calls?tool=createCharge");
    expect(byTool.total).toBe(2);
    const both = await c.json("/api/calls", "/api/calls?task=task-a&tool=createCharge&state=completed");
    expect(both.calls.map((x: { key: string }) => x.key)).toEqual([keys.charge]);
    const unknown = await c.json("/api/calls", "/api/calls?state=outcome_unknown");
    expect(unknown.calls.map((x: { key: string }) => x.key)).toEqual([keys.email]);

    const page1 = await c.json("/api/calls", "/api/calls?limit=3");
    const page2 = await c.json("/api/calls", "/api/calls?limit=3&offset=3");
    expect(page1.calls).toHaveLength(3);
    expect(page2).toMatchObject({ total: 4, offset: 3, limit: 3 });
    expect(page2.calls).toHaveLength(1);
    expect(new Set([...page1.calls, ...page2.calls].map((x: { key: string }) => x.key)).size).toBe(4);
  });

  it("/api/calls refuses a bad filter or page with a problem naming the parameter", async () => {
    const { c } = await setup();
    for (const [query, param] of [
      ["state=done", "state"],
      ["limit=0", "limit"],
      ["limit=501", "limit"],
      ["offset=-1", "offset"],
      ["limit=abc", "limit"],
    ] as const) {
      const res = await c.get(`/api/calls?${query}`);
      expect(res.status, query).toBe(400);
      const p = await problem(res);
      expect(slug(p)).toBe("bad-request");
      expect(p.param).toBe(param);
    }
  });

  it("/api/calls/:key shows the canonical arguments, the result and the audit trail", async () => {
    const { c, keys } = await setup();
    const charge = await c.json("/api/calls/:key", `/api/calls/${keys.charge}`);
    expect(charge).toMatchObject({
      key: keys.charge,
      state: "completed",
      attempts: 1,
      args: { customer: "cus_1", cardNumber: "[redacted]", auth: [{ apiKey: "[redacted]" }] },
      argsCanonical: '{"auth":[{"apiKey":"[redacted]"}],"cardNumber":"[redacted]","customer":"cus_1"}',
      result: { id: "ch_cus_1", login: { password: "[redacted]", user: "ops" } },
      events: [],
    });
    // Withheld beside masked fields: it would let them be guessed.
    expect(charge.argsHash).toBeNull();
    expect(charge.argsMasked).toBe(true);
    expect(typeof charge.durationMs).toBe("number");
    const email = await c.json("/api/calls/:key", `/api/calls/${keys.email}`);
    expect(email).toMatchObject({ state: "outcome_unknown", events: [{ type: "outcome_unknown" }] });
    expect(email).not.toHaveProperty("result");

    for (const path of [`/api/calls/${"0".repeat(64)}`, "/api/calls/not-a-key", "/api/calls/%E0%A4%A"]) {
      const res = await c.get(path);
      expect(res.status).toBe(404);
      expect(slug(await problem(res))).toBe("not-found");
    }
  });

  it("/api/tasks and /api/tasks/:id/timeline give each task's calls, times and audit trail", async () => {
    const { c, keys } = await setup();
    const tasks = await c.json("/api/tasks", "/api/tasks");
    expect(tasks.tasks.map((t: { taskId: string }) => t.taskId).sort()).toEqual(["task-a", "task-b"]);
    expect(tasks.tasks.find((t: { taskId: string }) => t.taskId === "task-a")).toMatchObject({
      calls: 2,
      counts: { completed: 1, awaiting_approval: 1 },
    });
    const tl = await c.json("/api/tasks/:id/timeline", "/api/tasks/task-a/timeline");
    expect(tl.taskId).toBe("task-a");
    expect(tl.calls.map((x: { key: string }) => x.key)).toEqual([keys.charge, keys.deploy]);
    expect(tl.calls[1]!.events).toEqual([{ type: "approval_requested", at: expect.any(Number) }]);
    expect(tl.from).toBe(tl.calls[0]!.createdAt);
    expect(tl.to).toBeGreaterThanOrEqual(tl.from);
    expect(tl.calls[0]).not.toHaveProperty("args");
    const none = await c.get(`/api/tasks/${encodeURIComponent("no such task")}/timeline`);
    expect(none.status).toBe(404);
    expect(slug(await problem(none))).toBe("not-found");
    const garbled = await c.get("/api/tasks/%E0%A4%A/timeline");
    expect(garbled.status).toBe(400);
    expect(slug(await problem(garbled))).toBe("bad-request");
  });

  it("/api/stream sends the counts at once and a change event when the ledger changes", async () => {
    const { c, w } = await setup();
    const res = await c.get("/api/stream", { accept: "text/event-stream", "x-idemkey-token": c.token });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const stream = events(res);
    try {
      const first = await stream.next();
      expect(first.event).toBe("change");
      expect(first.data).toMatchObject({ counts: { completed: 2 }, total: 4 });
      // A change made elsewhere (an agent's harness), seen by the server's poll.
      await w.harness.call("task-c", w.tools.charge, { customer: "cus_3", cardNumber: "x", auth: [] });
      const key = w.harness.key("task-c", w.tools.charge, { customer: "cus_3", cardNumber: "x", auth: [] });
      w.tick();
      let next = await stream.next();
      while (!(next.data as { changed: string[] }).changed.includes(key)) next = await stream.next();
      expect(next.event).toBe("change");
      expect(next.data).toMatchObject({ counts: { completed: 3 }, total: 5 });
    } finally {
      await stream.cancel();
    }
  });
});

describe("actions go through the harness and record who did them", () => {
  it("approve: the parked call waiting in an agent's harness runs once, recorded as approved by the name given", async () => {
    const { c, w, keys } = await setup();
    // An agent's harness waiting for the decision (the one in fill() gave up at once and left the call parked).
    const waiting = createHarness({
      store: w.store,
      clock: w.clock,
      wait: { minDelayMs: 2, maxDelayMs: 10 },
    });
    const call = waiting.call("task-a", w.tools.deploy, { service: "api" });
    expect(w.effects.filter((e) => e.tool === "deploy")).toHaveLength(0);
    const res = await c.post(`/api/calls/${keys.deploy}/approve`, { by: "ana" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ok: true, action: "approve", by: "ana" });
    expect(await call).toEqual({ deployed: "api" });
    expect(w.effects.filter((e) => e.tool === "deploy")).toEqual([{ tool: "deploy", key: keys.deploy }]);
    const entry = await w.harness.get(keys.deploy);
    expect(entry?.state).toBe("completed");
    expect(entry?.events.map((e) => [e.type, "by" in e ? e.by : undefined])).toEqual([
      ["approval_requested", undefined],
      ["approved", "ana"],
    ]);
  });

  it("approve without a name records the --user default", async () => {
    const { c, w, keys } = await setup();
    expect((await c.post(`/api/calls/${keys.deploy}/approve`, {})).status).toBe(200);
    expect((await w.harness.get(keys.deploy))?.events.at(-1)).toMatchObject({
      type: "approved",
      by: "os-user",
    });
  });

  it("deny: the call and every later one with its key throw ApprovalDeniedError with the reason", async () => {
    const { c, w, keys } = await setup();
    const noReason = await c.post(`/api/calls/${keys.deploy}/deny`, { by: "ana" });
    expect(noReason.status).toBe(400);
    expect((await w.harness.get(keys.deploy))?.state).toBe("awaiting_approval");
    const res = await c.post(`/api/calls/${keys.deploy}/deny`, { by: "ana", reason: "not on a Friday" });
    expect(res.status).toBe(200);
    const error = await w.harness.call("task-a", w.tools.deploy, { service: "api" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApprovalDeniedError);
    expect(error).toMatchObject({ reason: "not on a Friday", by: "ana" });
    expect(w.effects.filter((e) => e.tool === "deploy")).toHaveLength(0);
  });

  it("resolve with a result: later calls replay it and the tool never runs again", async () => {
    const { c, w, keys } = await setup();
    const res = await c.post(`/api/calls/${keys.email}/resolve`, {
      result: { sent: "found in the outbox" },
      by: "bo",
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { state: string }).state).toBe("completed");
    expect(await w.harness.call("task-b", w.tools.email, { to: "ops@acme.test" })).toEqual({
      sent: "found in the outbox",
    });
    expect(w.effects.filter((e) => e.tool === "sendEmail")).toHaveLength(0);
    expect((await w.harness.get(keys.email))?.events.at(-1)).toMatchObject({
      type: "resolved",
      how: "result",
      by: "bo",
    });
  });

  it("resolve with a retry: the next call runs the tool", async () => {
    const { c, w, keys } = await setup();
    expect((await c.post(`/api/calls/${keys.email}/resolve`, { retry: true })).status).toBe(200);
    expect((await w.harness.get(keys.email))?.state).toBe("approved");
    expect(await w.harness.call("task-b", w.tools.email, { to: "ops@acme.test" })).toEqual({
      sent: "ops@acme.test",
    });
    expect(w.effects.filter((e) => e.tool === "sendEmail")).toEqual([{ tool: "sendEmail", key: keys.email }]);
  });

  it("answers 409 wrong-state when the call is not in the state the action needs, and 400 for a bad resolution", async () => {
    const { c, keys } = await setup();
    const res = await c.post(`/api/calls/${keys.charge}/approve`, {});
    expect(res.status).toBe(409);
    const p = await problem(res);
    expect(slug(p)).toBe("wrong-state");
    expect(p).toMatchObject({ key: keys.charge, state: "completed" });
    for (const body of [{}, { result: 1, retry: true }, { retry: false }]) {
      const bad = await c.post(`/api/calls/${keys.email}/resolve`, body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    const notJson = await c.post(`/api/calls/${keys.email}/resolve`, "{oops");
    expect(notJson.status).toBe(400);
    expect(slug(await problem(notJson))).toBe("bad-request");
    const badName = await c.post(`/api/calls/${keys.deploy}/approve`, { by: "a\u0007b" });
    expect(badName.status).toBe(400);
    const huge = await c.post(`/api/calls/${keys.email}/resolve`, { result: "x".repeat(1_100_000) });
    expect(huge.status).toBe(413);
  });
});

describe("refusals: token, cross-site requests, read-only, host", () => {
  /** Every refusal leaves the parked call parked and the tool unrun. */
  async function expectUntouched(w: World, key: string) {
    expect((await w.harness.get(key))?.state).toBe("awaiting_approval");
    expect(w.effects.filter((e) => e.tool === "deploy")).toHaveLength(0);
  }

  it("refuses an action without the token, or with another one", async () => {
    const { c, w, keys } = await setup();
    const missing = await c.post(`/api/calls/${keys.deploy}/approve`, {}, { "x-idemkey-token": "" });
    expect(missing.status).toBe(403);
    expect(slug(await problem(missing))).toBe("token-required");
    const wrong = await c.post(`/api/calls/${keys.deploy}/approve`, {}, { "x-idemkey-token": `${c.token}x` });
    expect(wrong.status).toBe(403);
    expect(slug(await problem(wrong))).toBe("token-invalid");
    // A token in a cookie or the query is not the header.
    const cookie = await c.post(
      `/api/calls/${keys.deploy}/approve?token=${c.token}`,
      {},
      {
        "x-idemkey-token": "",
        cookie: `token=${c.token}`,
      },
    );
    expect(cookie.status).toBe(403);
    await expectUntouched(w, keys.deploy);
  });

  it("refuses cross-site requests and what a plain HTML form can send, even with the token", async () => {
    const { c, w, keys } = await setup();
    const path = `/api/calls/${keys.deploy}/approve`;
    const cases: [Record<string, string>, string, string][] = [
      [{ origin: "http://evil.example" }, "cross-site", "another Origin"],
      [{ origin: "null" }, "cross-site", "an opaque Origin"],
      [{ "sec-fetch-site": "cross-site" }, "cross-site", "Sec-Fetch-Site cross-site"],
      [{ "sec-fetch-site": "same-site" }, "cross-site", "Sec-Fetch-Site same-site"],
      [{ "content-type": "application/x-www-form-urlencoded" }, "unsupported-media-type", "a form post"],
      [{ "content-type": "multipart/form-data; boundary=x" }, "unsupported-media-type", "a multipart form"],
      [{ "content-type": "text/plain" }, "unsupported-media-type", "text/plain"],
    ];
    for (const [headers, expected, what] of cases) {
      const res = await c.post(path, "{}", headers);
      expect([res.status, slug(await problem(res))], what).toEqual([
        expected === "cross-site" ? 403 : 415,
        expected,
      ]);
    }
    await expectUntouched(w, keys.deploy);
    // The page's own request passes: same origin, JSON, token; also through a TLS proxy that keeps the Host.
    expect((await c.post(path, {}, { origin: c.base.replace("http:", "https:") })).status).toBe(200);
  });

  it("answers no CORS preflight and sends no CORS headers", async () => {
    const { c, keys } = await setup();
    const preflight = await fetch(`${c.base}/api/calls/${keys.deploy}/approve`, {
      method: "OPTIONS",
      headers: { origin: "http://evil.example", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(405);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    const read = await c.get("/api/counts", { origin: "http://evil.example" });
    expect(read.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("--read-only: actions answer 403 read-only, with or without the token, and the config says so", async () => {
    const { c, w, keys } = await setup({ readOnly: true });
    expect((await c.json("/api/config", "/api/config")).readOnly).toBe(true);
    for (const verb of ["approve", "deny", "resolve"]) {
      const res = await c.post(`/api/calls/${keys.deploy}/${verb}`, { reason: "r", retry: true });
      expect(res.status).toBe(403);
      expect(slug(await problem(res))).toBe("read-only");
    }
    await expectUntouched(w, keys.deploy);
    expect((await c.get("/api/calls")).status).toBe(200);
  });

  it("refuses a non-loopback Host name (DNS rebinding) on loopback", async () => {
    const { c } = await setup();
    const status = (host: string) =>
      new Promise<[number, string]>((resolve, reject) => {
        const req = request(`${c.base}/api/counts`, { headers: { host } }, (res) => {
          let body = "";
          res.on("data", (d) => (body += d));
          res.on("end", () => resolve([res.statusCode!, body]));
        });
        req.on("error", reject);
        req.end();
      });
    const [code, body] = await status("attacker.example:80");
    expect(code).toBe(403);
    expect(JSON.parse(body).type).toMatch(/host-refused$/);
    expect((await status(`localhost:${new URL(c.base).port}`))[0]).toBe(200);
    expect((await status(`[::1]:${new URL(c.base).port}`))[0]).toBe(200);
  });

  it("remote: reads need the token too", async () => {
    const { c } = await setup({ remote: true });
    const res = await c.get("/api/calls");
    expect(res.status).toBe(403);
    expect(slug(await problem(res))).toBe("token-required");
    expect((await c.get("/api/calls", { "x-idemkey-token": c.token })).status).toBe(200);
    // The page itself loads, and asks for the token.
    expect((await c.get("/")).status).toBe(200);
  });

  it("refuses the wrong method with 405 and an Allow header", async () => {
    const { c, keys } = await setup();
    const get = await c.get(`/api/calls/${keys.deploy}/approve`);
    expect([get.status, get.headers.get("allow")]).toEqual([405, "POST"]);
    const post = await c.post("/api/calls", {});
    expect([post.status, post.headers.get("allow")]).toEqual([405, "GET"]);
  });
});

describe("redaction", () => {
  it("masks the default fields anywhere in arguments and results, and never sends the secrets", async () => {
    const { c, keys } = await setup();
    const text = await (await c.get(`/api/calls/${keys.charge}`)).text();
    for (const secret of [SECRET_CARD, SECRET_KEY, SECRET_PASSWORD]) expect(text).not.toContain(secret);
    expect(text).toContain("cus_1");
    const timeline = await (await c.get("/api/tasks/task-a/timeline")).text();
    for (const secret of [SECRET_CARD, SECRET_KEY, SECRET_PASSWORD]) expect(timeline).not.toContain(secret);
  });

  it("masks the fields given instead, and nothing with an empty list", async () => {
    const custom = await setup({ redact: ["customer"] });
    const masked = await custom.c.json("/api/calls/:key", `/api/calls/${custom.keys.charge}`);
    expect(masked.args).toEqual({
      customer: "[redacted]",
      cardNumber: SECRET_CARD,
      auth: [{ apiKey: SECRET_KEY }],
    });
    await custom.c.close();
    client = undefined;
    const open = await setup({ redact: [] });
    const shown = await open.c.json("/api/calls/:key", `/api/calls/${open.keys.charge}`);
    expect(shown.result!.login.password).toBe(SECRET_PASSWORD);
  });
});

describe("what the inspector sees change", () => {
  it("records a lease taken over by another claim, which the ledger itself does not keep", async () => {
    let now = 1_800_000_000_000;
    const clock = () => now;
    const store = memoryStore({ clock });
    const harness = createHarness({ store, clock, leaseMs: 1_000 });
    const tool = defineTool({ name: "slow", effect: "keyed", run: () => "done" });
    const key = harness.key("t", tool, {});
    // A worker claimed the call and died (its lease is never renewed): a claim made as the harness makes it.
    const data = JSON.stringify({
      v: 1,
      taskId: "t",
      tool: "slow",
      effect: "keyed",
      argsHash: "h",
      args: "{}",
      events: [],
    });
    await store.claim(`call:${key}`, {
      fingerprint: key,
      token: "worker-1",
      leaseMs: 1_000,
      ttlMs: 60_000,
      data,
    });
    client = await serve({ store, clock });
    await client.get("/api/counts"); // the inspector's first read of the ledger
    const before = await client.json("/api/calls/:key", `/api/calls/${key}`);
    expect(before.holder).toMatch(/^[0-9a-f]{8}$/);
    now += 5_000;
    const taken = await store.claim(`call:${key}`, {
      fingerprint: key,
      token: "worker-2",
      leaseMs: 1_000,
      ttlMs: 60_000,
      data,
    });
    expect(taken.status).toBe("taken_over");
    await client.get("/api/counts"); // the inspector's next read
    const after = await client.json("/api/calls/:key", `/api/calls/${key}`);
    expect(after.holder).not.toBe(before.holder);
    expect(after.observations).toEqual([
      { type: "taken_over", at: now, from: before.holder, to: after.holder },
    ]);
    // Neither token is ever shown.
    expect(JSON.stringify(after)).not.toMatch(/worker-/);
  });
});
