import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHarness, idempotencyKey, memoryStore, OutcomeUnknownError } from "../../src/index.js";
import {
  IDEMPOTENCY_KEY_META,
  LOOKUP_META,
  LOOKUP_STATE_META,
  mcpDedupe,
  mcpLookupReconcile,
  mcpTool,
  REFUSAL_META,
} from "../../src/mcp/index.js";
import { createReconciler } from "../../src/reconciler/index.js";
import type { Store } from "../../src/store/types.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-mcp-lookup-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** The transfers the server's tool made, one line each in its own file: the independent count of effects. */
function transfers(file: string): { to: string; cents: number; clientId: string | undefined }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line));
}

/**
 * An MCP server with mcpDedupe (scoped by the authenticated client, the default): `transfer` writes a line per run,
 * `slow_transfer` waits at a gate first (`entered` resolves once it waits), `broken_transfer` writes, then throws.
 */
function server(store: Store, file = join(dir, `transfers-${++files}.jsonl`)) {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let onEnter!: () => void;
  const entered = new Promise<void>((resolve) => (onEnter = resolve));
  const s = new McpServer({ name: "bank", version: "1.0.0" });
  const idempotent = mcpDedupe({ store });
  const input = { to: z.string(), cents: z.number() };
  const record = (args: { to: string; cents: number }, extra: { authInfo?: { clientId: string } }) =>
    appendFileSync(file, `${JSON.stringify({ ...args, clientId: extra.authInfo?.clientId })}\n`);
  s.registerTool(
    "transfer",
    { inputSchema: input },
    idempotent("transfer", async (args, extra) => {
      record(args, extra);
      return {
        content: [{ type: "text", text: `sent ${args.cents} to ${args.to}` }],
        structuredContent: { id: `tr-${args.to}-${args.cents}` },
      };
    }),
  );
  s.registerTool(
    "slow_transfer",
    { inputSchema: input },
    idempotent("slow_transfer", async (args, extra) => {
      onEnter();
      await gate;
      record(args, extra);
      return { content: [{ type: "text", text: "sent slowly" }] };
    }),
  );
  s.registerTool(
    "broken_transfer",
    { inputSchema: input },
    idempotent("broken_transfer", async (args, extra) => {
      record(args, extra);
      throw new Error("connection reset after the transfer");
    }),
  );
  return { server: s, file, open, entered };
}

/** A client connected over the in-memory transport as `clientId`; `drop` loses chosen messages either way. */
async function connect(
  s: McpServer,
  clientId: string,
  drop: { request?: (m: JSONRPCMessage) => boolean; reply?: (m: JSONRPCMessage) => boolean } = {},
) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const send = clientSide.send.bind(clientSide);
  clientSide.send = (message, options) =>
    drop.request?.(message)
      ? Promise.resolve()
      : send(message, { ...options, authInfo: { token: "t", clientId, scopes: [] } });
  const reply = serverSide.send.bind(serverSide);
  serverSide.send = (message, options) =>
    drop.reply?.(message) ? Promise.resolve() : reply(message, options);
  await s.connect(serverSide);
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

const ARGS = { to: "bob", cents: 500 };
const KEY = idempotencyKey("task-1", "transfer", ARGS);
const ctx = (key: string) => ({
  idempotencyKey: key,
  taskId: "task-1",
  tool: "transfer",
  attempt: 1,
  signal: new AbortController().signal,
});
const keyed = (name: string, key: string, extra: Record<string, unknown> = {}) => ({
  name,
  arguments: ARGS,
  _meta: { [IDEMPOTENCY_KEY_META]: key, ...extra },
});

describe("MCP key lookups through mcpDedupe, over the SDK's in-memory transport", () => {
  it("a completed key: done with the recorded result, and the tool does not run again", async () => {
    const s = server(memoryStore());
    const client = await connect(s.server, "acct-a");
    const first = await client.callTool(keyed("transfer", KEY));
    expect(transfers(s.file)).toHaveLength(1);

    const reconcile = mcpLookupReconcile(client, { name: "transfer" });
    const answer = await reconcile(ARGS, ctx(KEY));
    expect(answer).toEqual({
      status: "done",
      result: { content: first.content, structuredContent: first.structuredContent },
      evidence: { lookup: "completed" },
    });
    const raw = await client.callTool(keyed("transfer", KEY, { [LOOKUP_META]: true }));
    expect(raw._meta?.[LOOKUP_STATE_META]).toBe("completed");
    expect(transfers(s.file)).toHaveLength(1);
    await client.close();
  });

  it("an unknown key is not done; a lookup runs nothing, and the call then runs once", async () => {
    const s = server(memoryStore());
    const client = await connect(s.server, "acct-a");
    const reconcile = mcpLookupReconcile(client, { name: "transfer" });
    expect(await reconcile(ARGS, ctx(KEY))).toEqual({ status: "not_done", evidence: { lookup: "unknown" } });
    expect(await reconcile(ARGS, ctx(KEY))).toMatchObject({ status: "not_done" });
    expect(transfers(s.file)).toEqual([]);
    // The lookup took no key: the call with it runs.
    await client.callTool(keyed("transfer", KEY));
    expect(transfers(s.file)).toHaveLength(1);
    await client.close();
  });

  it("in flight, or an outcome the server cannot tell: undecided", async () => {
    const s = server(memoryStore());
    const client = await connect(s.server, "acct-a");
    const running = client.callTool(keyed("slow_transfer", KEY));
    await s.entered;
    const slow = mcpLookupReconcile(client, { name: "slow_transfer" });
    const raw = await client.callTool(keyed("slow_transfer", KEY, { [LOOKUP_META]: true }));
    expect(raw._meta?.[LOOKUP_STATE_META]).toBe("in_flight");
    expect(await slow(ARGS, ctx(KEY))).toBeUndefined();
    s.open();
    await running;
    expect(transfers(s.file)).toHaveLength(1);

    const other = idempotencyKey("task-1", "broken_transfer", ARGS);
    const broken = await client.callTool(keyed("broken_transfer", other));
    expect(broken._meta?.[REFUSAL_META]).toBe("outcome_unknown");
    const brokenLookup = mcpLookupReconcile(client, { name: "broken_transfer" });
    expect(await brokenLookup(ARGS, ctx(other))).toBeUndefined();
    expect(transfers(s.file)).toHaveLength(2);
    await client.close();
  });

  it("another caller's key reads exactly as a key nobody sent", async () => {
    const store = memoryStore();
    const s = server(store);
    const a = await connect(s.server, "acct-a");
    await a.callTool(keyed("transfer", KEY));
    const b = await connect(server(store).server, "acct-b");
    const never = idempotencyKey("task-never", "transfer", ARGS);
    const across = await b.callTool(keyed("transfer", KEY, { [LOOKUP_META]: true }));
    const unsent = await b.callTool(keyed("transfer", never, { [LOOKUP_META]: true }));
    expect(across).toEqual(unsent);
    expect(across._meta?.[LOOKUP_STATE_META]).toBe("unknown");
    expect(await mcpLookupReconcile(b, { name: "transfer" })(ARGS, ctx(KEY))).toMatchObject({
      status: "not_done",
    });
    expect(transfers(s.file).map((t) => t.clientId)).toEqual(["acct-a"]);
    await a.close();
    await b.close();
  });

  it("refuses a lookup without a key, spelt wrong, or for other arguments: nothing runs", async () => {
    const s = server(memoryStore());
    const client = await connect(s.server, "acct-a");
    const bare = await client.callTool({ name: "transfer", arguments: ARGS, _meta: { [LOOKUP_META]: true } });
    expect(bare._meta?.[REFUSAL_META]).toBe("key_missing");
    const wrong = await client.callTool(keyed("transfer", KEY, { [LOOKUP_META]: "yes" }));
    expect(wrong._meta?.[REFUSAL_META]).toBe("key_invalid");
    await client.callTool(keyed("transfer", KEY));
    const other = await client.callTool({
      name: "transfer",
      arguments: { to: "eve", cents: 1 },
      _meta: { [IDEMPOTENCY_KEY_META]: KEY, [LOOKUP_META]: true },
    });
    expect(other._meta?.[REFUSAL_META]).toBe("key_reused");
    await expect(
      mcpLookupReconcile(client, { name: "transfer" })({ to: "eve", cents: 1 }, ctx(KEY)),
    ).rejects.toThrow(/key_reused/);
    expect(transfers(s.file)).toHaveLength(1);
    expect(() => mcpLookupReconcile(client, { name: "" })).toThrow(/options\.name/);
    await client.close();
  });
});

describe("a lookup the store cannot answer", () => {
  it("is refused as unavailable, told to onError with phase lookup, and runs nothing", async () => {
    const store = memoryStore();
    const broken: Store = {
      ...store,
      get: async () => {
        throw new Error("store down");
      },
    };
    const events: { phase: string; key: string }[] = [];
    let runs = 0;
    const s = new McpServer({ name: "bank", version: "1.0.0" });
    const idempotent = mcpDedupe({
      store: broken,
      onError: (e) => events.push({ phase: e.phase, key: e.key }),
    });
    s.registerTool(
      "transfer",
      { inputSchema: { to: z.string(), cents: z.number() } },
      idempotent("transfer", async () => {
        runs++;
        return { content: [{ type: "text", text: "sent" }] };
      }),
    );
    const client = await connect(s, "acct-a");
    const answer = await client.callTool(keyed("transfer", KEY, { [LOOKUP_META]: true }));
    expect(answer._meta?.[REFUSAL_META]).toBe("unavailable");
    expect(events).toEqual([{ phase: "lookup", key: KEY }]);
    await expect(mcpLookupReconcile(client, { name: "transfer" })(ARGS, ctx(KEY))).rejects.toThrow(
      /unavailable/,
    );
    expect(runs).toBe(0);
    await client.close();
  });
});

describe("a reconciler with mcpLookupReconcile", () => {
  it("resolves the unknown outcomes of an unguarded MCP tool whose answers were lost; no effect repeats", async () => {
    const store = memoryStore();
    const s = server(store);
    const isCall = (m: JSONRPCMessage, to: string) =>
      "method" in m &&
      m.method === "tools/call" &&
      (m.params as { arguments?: { to?: string } }).arguments?.to === to;
    const replies = new Set<string | number>();
    // "lost-reply": the server runs it and its answer is lost; "lost-request": the call never reaches the server.
    const agent = await connect(s.server, "acct-a", {
      request: (m) => {
        if (isCall(m, "lost-reply") && "id" in m && m.id !== undefined) replies.add(m.id);
        return isCall(m, "lost-request");
      },
      reply: (m) => "id" in m && !("method" in m) && m.id !== undefined && replies.has(m.id),
    });
    const harness = createHarness({ store, retry: { retries: 0 } });
    const transfer = mcpTool(agent, { name: "transfer", effect: "unguarded", timeoutMs: 200 });
    const lostReply = { to: "lost-reply", cents: 1 };
    const lostRequest = { to: "lost-request", cents: 2 };
    await expect(harness.call("task", transfer, lostReply)).rejects.toBeInstanceOf(OutcomeUnknownError);
    await expect(harness.call("task", transfer, lostRequest)).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(transfers(s.file).map((t) => t.to)).toEqual(["lost-reply"]);

    // The reconciler's own connection, as the same caller, to another instance of the server on the same store.
    const client = await connect(server(store, s.file).server, "acct-a");
    const reconciling = mcpTool(client, {
      name: "transfer",
      effect: "unguarded",
      reconcile: mcpLookupReconcile(client, { name: "transfer" }),
    });
    const reconciler = createReconciler({ store, tools: [reconciling], id: "mcp-reconciler" });
    const report = await reconciler.sweep();
    await reconciler.stop();
    expect(report).toMatchObject({ done: 1, notDone: 1, undecided: 0, failed: 0, conflict: 0 });
    // Asking ran nothing.
    expect(transfers(s.file).map((t) => t.to)).toEqual(["lost-reply"]);
    const entry = await harness.get(harness.key("task", transfer, lostReply));
    expect(entry).toMatchObject({
      state: "completed",
      result: { structuredContent: { id: "tr-lost-reply-1" } },
    });

    // The agent comes back: the lost reply is replayed from the ledger, the lost request runs now, once.
    const calls = mcpTool(client, { name: "transfer", effect: "unguarded" });
    expect(await harness.call("task", calls, lostReply)).toMatchObject({
      structuredContent: { id: "tr-lost-reply-1" },
    });
    expect(await harness.call("task", calls, lostRequest)).toMatchObject({
      structuredContent: { id: "tr-lost-request-2" },
    });
    const counted = transfers(s.file).map((t) => t.to);
    expect(counted.sort()).toEqual(["lost-reply", "lost-request"]);
    await agent.close();
    await client.close();
  });
});
