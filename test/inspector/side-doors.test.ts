import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Hono } from "hono";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { idempotency } from "../../src/hono/index.js";
import {
  createHarness,
  defineTool,
  memoryStore,
  OutcomeUnknownError,
  type Store,
  WaitTimeoutError,
} from "../../src/index.js";
import { type KeyList, type KeySummary, listRecords } from "../../src/inspector/index.js";
import { IDEMPOTENCY_KEY_META, mcpDedupe } from "../../src/mcp/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { runCli } from "../support/cli.js";
import { type Client, events, serve } from "./support.js";

/**
 * Side doors around the redaction: no answer of the inspector (its JSON API, `idemkey inspect --list`) may show a
 * value it masks, and no filter or identifier may confirm one. The owner's keys are written by the real Hono
 * middleware and mcpDedupe, the ledger by the harness, into one SQLite file that the CLI reads too; the effects are
 * counted by the handlers themselves.
 */

/** An API key the middleware scopes by: the inspector masks it while any field is redacted. */
const SCOPE = "sk_live_scope_9f2c41d7";
const OTHER_SCOPE = "sk_live_scope_b07e55aa";
const WRONG_SCOPE = "sk_live_scope_00000000";
/** A token in a request's query. */
const TOKEN = "s3cr3t";
/** What follows `token=` in every string the sweep seeds. */
const SWEEP = "SWEEPv4lue91";
const SECRETS = [SCOPE, OTHER_SCOPE, TOKEN, SWEEP];
const SECRET_A = "inspector-secret-aaaaaaaaaaaaaaaa";
const SECRET_B = "inspector-secret-bbbbbbbbbbbbbbbb";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

const dir = mkdtempSync(join(tmpdir(), "idemkey-inspector-side-doors-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

async function inspector(store: Store, options: { secret?: string; redact?: string[] } = {}) {
  const client = await serve({ store, pollMs: 50, ...options });
  clients.push(client);
  return client;
}

async function text(c: Client, path: string, headers: Record<string, string> = {}) {
  const res = await c.get(path, headers);
  return { status: res.status, body: await res.text() };
}

let n = 0;
/**
 * A SQLite file holding the owner's keys the Hono middleware wrote, scoped by the `x-api-key` header: `k-1` and
 * `k-3` by SCOPE, `k-2` by OTHER_SCOPE, each a POST to `/ok?token=s3cr3t&x=1`; with `sweep`, also an MCP key and
 * ledger calls whose every string holds `token=SWEEP`.
 */
async function seed(sweep = false) {
  const db = join(dir, `ledger-${++n}.db`);
  const store = sqliteStore(db);
  const effects: string[] = [];
  const app = new Hono();
  app.use("*", idempotency({ store, scope: (c) => c.req.header("x-api-key") ?? "" }));
  app.post("/ok", async (c) => {
    effects.push(c.req.header("idempotency-key")!);
    c.header("x-note", `token=${SWEEP}`);
    return c.json({ note: `token=${SWEEP}`, echo: await c.req.json() }, 201);
  });
  const post = async (key: string, scope: string) => {
    const res = await app.request(`/ok?token=${TOKEN}&x=1`, {
      method: "POST",
      headers: { "idempotency-key": key, "content-type": "application/json", "x-api-key": scope },
      body: JSON.stringify({ memo: `token=${SWEEP}` }),
    });
    expect(res.status).toBe(201);
  };
  await post("k-1", SCOPE);
  await post("k-2", OTHER_SCOPE);
  await post("k-3", SCOPE);
  const sweepKey = `k-token=${SWEEP}`;
  if (sweep) await post(sweepKey, SCOPE);
  expect(effects).toEqual(["k-1", "k-2", "k-3", ...(sweep ? [sweepKey] : [])]);

  if (sweep) {
    // An MCP server's key, scoped by a secret, for a tool whose name holds one.
    const dedupe = mcpDedupe({ store, scope: () => SCOPE });
    const server = new McpServer({ name: "own", version: "1.0.0" });
    // Registered under a name MCP allows; the name the record keeps (dedupe's) holds the secret.
    const toolName = "lookup_token";
    server.registerTool(
      toolName,
      { inputSchema: { q: z.string() } },
      dedupe(`lookup_token=${SWEEP}`, async ({ q }) => {
        effects.push(`mcp:${q}`);
        return { content: [{ type: "text" as const, text: `found token=${SWEEP}` }] };
      }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const mcp = new McpClient({ name: "agent", version: "1.0.0" });
    await mcp.connect(clientSide);
    await mcp.callTool({
      name: toolName,
      arguments: { q: `token=${SWEEP}` },
      _meta: { [IDEMPOTENCY_KEY_META]: `m-token=${SWEEP}` },
    });
    await mcp.close();
    expect(effects.filter((e) => e.startsWith("mcp:"))).toHaveLength(1);

    // Ledger calls: a completed one, a denied one, an approved one and a resolved unknown outcome, with the task,
    // tool, step, arguments, result, reasons, names and error text each holding a secret.
    const harness = createHarness({ store, retry: { retries: 0 }, approvalTimeoutMs: 0 });
    const task = `task token=${SWEEP}`;
    const lookup = defineTool({
      name: `lookup token=${SWEEP}`,
      effect: "keyed",
      run: (args: { q: string }) => ({ found: `token=${SWEEP}`, q: args.q }),
    });
    await harness.call(task, lookup, { q: `token=${SWEEP}` }, { step: `step token=${SWEEP}` });
    const deploy = defineTool({
      name: `deploy token=${SWEEP}`,
      effect: "keyed",
      requiresApproval: true,
      run: () => ({ deployed: `token=${SWEEP}` }),
    });
    for (const service of ["a", "b"]) {
      await expect(harness.call(task, deploy, { service })).rejects.toBeInstanceOf(WaitTimeoutError);
    }
    await harness.deny(harness.key(task, deploy, { service: "a" }), `reason token=${SWEEP}`, {
      by: `ana token=${SWEEP}`,
    });
    await harness.approve(harness.key(task, deploy, { service: "b" }), { by: `bo token=${SWEEP}` });
    const send = defineTool({
      name: `send token=${SWEEP}`,
      effect: "unguarded",
      run: () => {
        throw new Error(`socket hang up token=${SWEEP}`);
      },
    });
    await expect(harness.call(task, send, { to: "x" })).rejects.toBeInstanceOf(OutcomeUnknownError);
    await harness.resolve(
      harness.key(task, send, { to: "x" }),
      { result: { note: `token=${SWEEP}` } },
      { by: `cy token=${SWEEP}` },
    );
  }
  return { db, store };
}

const keysOf = (list: KeyList) => list.keys.map((row) => row.key).sort();

describe("a redacted scope cannot be confirmed", () => {
  it("a right and a wrong guess of a masked scope get the same answer; the keyed scopeId filters", async () => {
    const { store } = await seed();
    const c = await inspector(store);
    const all = (await c.json("/api/calls", "/api/keys")) as unknown as KeyList;
    expect(keysOf(all)).toEqual(["k-1", "k-2", "k-3"]);
    expect(all.keys.every((row) => row.scope === "[redacted]")).toBe(true);

    const right = await text(c, `/api/keys?scope=${encodeURIComponent(SCOPE)}`);
    const wrong = await text(c, `/api/keys?scope=${encodeURIComponent(WRONG_SCOPE)}`);
    expect(right.status).toBe(wrong.status);
    expect(right.body).toBe(wrong.body);
    const rightUnknown = await text(c, `/api/keys?state=completed&scope=${encodeURIComponent(SCOPE)}`);
    const wrongUnknown = await text(c, `/api/keys?state=completed&scope=${encodeURIComponent(WRONG_SCOPE)}`);
    expect(rightUnknown.body).toBe(wrongUnknown.body);

    // The scopeId the answer shows selects one caller's keys.
    const scopeId = all.keys.find((row) => row.key === "k-1")!.scopeId;
    expect(all.keys.find((row) => row.key === "k-2")!.scopeId).not.toBe(scopeId);
    const byId = JSON.parse((await text(c, `/api/keys?scopeId=${scopeId}`)).body) as KeyList;
    expect(keysOf(byId)).toEqual(["k-1", "k-3"]);
    expect(byId.total).toBe(2);
  });

  it("scopeId is keyed: not a SHA-256 prefix of the scope, and different under another inspector's secret", async () => {
    const { store } = await seed();
    const scopeIdOf = async (c: Client) => {
      const list = (await c.json("/api/calls", "/api/keys")) as unknown as KeyList;
      return list.keys.find((row) => row.key === "k-1")!.scopeId;
    };
    const a = await scopeIdOf(await inspector(store, { secret: SECRET_A }));
    const a2 = await scopeIdOf(await inspector(store, { secret: SECRET_A }));
    const b = await scopeIdOf(await inspector(store, { secret: SECRET_B }));
    const random1 = await scopeIdOf(await inspector(store));
    const random2 = await scopeIdOf(await inspector(store));
    expect(a).toMatch(/^[0-9a-f]{12}$/);
    expect(a2).toBe(a);
    expect(b).not.toBe(a);
    expect(random1).not.toBe(random2);
    for (const id of [a, b, random1]) {
      expect(sha256(SCOPE).startsWith(id)).toBe(false);
      expect(sha256(JSON.stringify(SCOPE)).startsWith(id)).toBe(false);
    }
  });

  it("nothing in the answer is a bare hash of the masked scope: not its SHA-256, nor the store key of (scope, key)", async () => {
    const { store } = await seed();
    const c = await inspector(store);
    const { body } = await text(c, "/api/keys");
    for (const key of ["k-1", "k-2", "k-3"]) {
      for (const scope of [SCOPE, OTHER_SCOPE]) {
        // The middleware's store key is `http:` + SHA-256 of [scope, key]: from a guess, it confirms the scope.
        expect(body).not.toContain(sha256(JSON.stringify([scope, key])).slice(0, 12));
      }
    }
    for (const scope of [SCOPE, OTHER_SCOPE]) expect(body).not.toContain(sha256(scope).slice(0, 12));
  });

  it("with nothing redacted the scope shows, and filters as shown", async () => {
    const { store } = await seed();
    const c = await inspector(store, { redact: [] });
    const list = JSON.parse((await text(c, `/api/keys?scope=${encodeURIComponent(SCOPE)}`)).body) as KeyList;
    expect(keysOf(list)).toEqual(["k-1", "k-3"]);
    expect(list.keys.every((row) => row.scope === SCOPE)).toBe(true);
    const wrong = JSON.parse((await text(c, `/api/keys?scope=${WRONG_SCOPE}`)).body) as KeyList;
    expect(wrong.total).toBe(0);
  });

  it("refuses a scopeId that is not 12 hex digits, naming the parameter", async () => {
    const { store } = await seed();
    const c = await inspector(store);
    const res = await c.get("/api/keys?scopeId=alice");
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ param: "scopeId" });
  });
});

describe("a claim's holder is keyed", () => {
  it("holder is not a SHA-256 prefix of the claim's token, and differs under another inspector's secret", async () => {
    const store = memoryStore();
    const harness = createHarness({ store });
    let release!: () => void;
    const started = new Promise<void>((resolve) => {
      release = resolve;
    });
    let finish!: () => void;
    const blocked = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const slow = defineTool({
      name: "slow",
      effect: "keyed",
      run: async () => {
        release();
        await blocked;
        return "done";
      },
    });
    const running = harness.call("task", slow, {});
    await started;
    try {
      const record = (await store.list({ prefix: "call:" }))[0]!;
      expect(record.state).toBe("pending");
      const holderUnder = async (secret: string) => {
        const c = await inspector(store, { secret });
        const list = (await c.json("/api/calls", "/api/calls")) as { calls: { holder: string | null }[] };
        return list.calls[0]!.holder!;
      };
      const a = await holderUnder(SECRET_A);
      const b = await holderUnder(SECRET_B);
      expect(a).toMatch(/^[0-9a-f]{8}$/);
      expect(b).not.toBe(a);
      expect(sha256(record.token!).startsWith(a)).toBe(false);
    } finally {
      finish();
      await running;
    }
  });
});

describe("a token in a request target is masked", () => {
  it("/api/keys shows /ok?token=[redacted]&x=1", async () => {
    const { store } = await seed();
    const c = await inspector(store);
    const { body } = await text(c, "/api/keys");
    expect(body).not.toContain(TOKEN);
    const list = JSON.parse(body) as KeyList;
    expect(list.keys.map((row) => row.target)).toEqual(Array(3).fill("/ok?token=[redacted]&x=1"));
  });

  it("idemkey inspect --list shows /ok?token=[redacted]&x=1", async () => {
    const { db, store } = await seed();
    await store.close();
    const { code, stdout, stderr } = await runCli(["inspect", "--store", `sqlite:${db}`, "--list"]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout).not.toContain(TOKEN);
    const rows = stdout
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as KeySummary);
    expect(rows.map((row) => row.target)).toEqual(Array(3).fill("/ok?token=[redacted]&x=1"));
  });

  it("idemkey inspect --list --secret gives the same scopeIds run after run, and others under another secret", async () => {
    const { db, store } = await seed();
    await store.close();
    const ids = async (...extra: string[]) => {
      const { code, stdout, stderr } = await runCli([
        "inspect",
        "--store",
        `sqlite:${db}`,
        "--list",
        ...extra,
      ]);
      expect(stderr).toBe("");
      expect(code).toBe(0);
      return stdout
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as KeySummary)
        .sort((x, y) => (x.key < y.key ? -1 : 1))
        .map((row) => row.scopeId);
    };
    const a = await ids("--secret", SECRET_A);
    expect(a[0]).toBe(a[2]);
    expect(a[0]).not.toBe(a[1]);
    expect(await ids("--secret", SECRET_A)).toEqual(a);
    expect((await ids("--secret", SECRET_B))[0]).not.toBe(a[0]);
    // The same secret, the same ids as the page's.
    const reopened = sqliteStore(db);
    try {
      const c = await inspector(reopened, { secret: SECRET_A });
      const list = (await c.json("/api/calls", "/api/keys")) as unknown as KeyList;
      expect(list.keys.find((row) => row.key === "k-1")!.scopeId).toBe(a[0]);
    } finally {
      await reopened.close();
    }
  });

  it("idemkey inspect refuses a --secret shorter than 16 characters with one line and exit 2", async () => {
    const { code, stdout, stderr } = await runCli(["inspect", "--store", "sqlite:x.db", "--secret", "short"]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^idemkey: --secret must be at least 16 characters\n$/);
  });
});

describe("every string the inspector shows passes through the redaction", () => {
  it("sweep: no JSON answer of the API, no stream event and no line of inspect --list holds a masked value", async () => {
    const { db, store } = await seed(true);
    const c = await inspector(store);
    const answers: Record<string, string> = {};
    const read = async (path: string) => {
      const { status, body } = await text(c, path);
      expect(status, `${path}: ${body}`).toBe(200);
      answers[path] = body;
      return JSON.parse(body);
    };
    await read("/api/config");
    const counts = await read("/api/counts");
    expect(counts.total).toBe(4);
    const calls = await read("/api/calls");
    expect(calls.total).toBe(4);
    for (const call of calls.calls as { key: string }[]) await read(`/api/calls/${call.key}`);
    const tasks = await read("/api/tasks");
    expect(tasks.tasks).toHaveLength(1);
    for (const task of tasks.tasks as { taskId: string }[]) {
      const timeline = await read(`/api/tasks/${encodeURIComponent(task.taskId)}/timeline`);
      expect(timeline.calls).toHaveLength(4);
    }
    for (const kind of ["", "?kind=http", "?kind=mcp"]) await read(`/api/keys${kind}`);
    const keys = JSON.parse(answers["/api/keys"]!) as KeyList;
    expect(keys.total).toBe(5);
    const stream = await c.get("/api/stream", { "x-idemkey-token": c.token });
    const sse = events(stream);
    answers["/api/stream"] = JSON.stringify((await sse.next()).data);
    await sse.cancel();

    for (const [path, body] of Object.entries(answers)) {
      for (const secret of SECRETS) expect(body, `${path} shows ${secret}`).not.toContain(secret);
    }
    // Not a vacuous pass: the seeded strings are there, masked.
    const all = Object.values(answers).join("\n");
    for (const shown of [
      "task token=[redacted]",
      "lookup token=[redacted]",
      "step token=[redacted]",
      "reason token=[redacted]",
      "ana token=[redacted]",
      "bo token=[redacted]",
      "cy token=[redacted]",
      "socket hang up token=[redacted]",
      "lookup_token=[redacted]",
      "k-token=[redacted]",
      "m-token=[redacted]",
      "/ok?token=[redacted]&x=1",
    ]) {
      expect(all).toContain(shown);
    }

    // The library's listing and the CLI's alike.
    const listed = JSON.stringify(await listRecords(store));
    for (const secret of SECRETS) expect(listed).not.toContain(secret);
    await store.close();
    const cli = await runCli(["inspect", "--store", `sqlite:${db}`, "--list"]);
    expect(cli.stderr).toBe("");
    expect(cli.code).toBe(0);
    expect(cli.stdout.split("\n").filter(Boolean)).toHaveLength(4 + 5);
    for (const secret of SECRETS) expect(cli.stdout).not.toContain(secret);
  });

  it("a filter or a lookup by a masked value answers as for a wrong guess; by the value shown, it finds", async () => {
    const { store } = await seed(true);
    const c = await inspector(store);
    const task = `task token=${SWEEP}`;
    const shownTask = "task token=[redacted]";
    const wrongTask = "task token=nope";
    const same = async (right: string, wrong: string) => {
      const a = await text(c, right);
      const b = await text(c, wrong);
      expect([a.status, a.body]).toEqual([b.status, b.body]);
    };
    await same(
      `/api/calls?task=${encodeURIComponent(task)}`,
      `/api/calls?task=${encodeURIComponent(wrongTask)}`,
    );
    await same(
      `/api/calls?tool=${encodeURIComponent(`lookup token=${SWEEP}`)}`,
      `/api/calls?tool=${encodeURIComponent("lookup token=nope")}`,
    );
    await same(
      `/api/tasks/${encodeURIComponent(task)}/timeline`,
      `/api/tasks/${encodeURIComponent(wrongTask)}/timeline`,
    );
    const byShown = JSON.parse((await text(c, `/api/calls?task=${encodeURIComponent(shownTask)}`)).body);
    expect(byShown.total).toBe(4);
    const byTool = JSON.parse(
      (await text(c, `/api/calls?tool=${encodeURIComponent("lookup token=[redacted]")}`)).body,
    );
    expect(byTool.total).toBe(1);
    expect((await c.get(`/api/tasks/${encodeURIComponent(shownTask)}/timeline`)).status).toBe(200);
  });
});
