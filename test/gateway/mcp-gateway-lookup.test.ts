import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { mcpGateway } from "../../src/gateway/index.js";
import { createHarness, memoryStore, OutcomeUnknownError } from "../../src/index.js";
import {
  IDEMPOTENCY_KEY_META,
  LOOKUP_META,
  LOOKUP_STATE_META,
  mcpLookupReconcile,
  mcpTool,
  REFUSAL_META,
} from "../../src/mcp/index.js";
import { createReconciler } from "../../src/reconciler/index.js";
import type { Store } from "../../src/store/types.js";
import { entities, tempRuns } from "./support.js";

// Lookups through mcpGateway (as a library) in front of @modelcontextprotocol/server-memory, a published server
// nobody here wrote, spawned over stdio. Effects are counted in its own file, and every tools/call that reaches it
// is counted on the upstream transport, outside idemkey.
const require = createRequire(import.meta.url);
const MEMORY = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");
const runs = tempRuns("idemkey-gateway-lookup-");

interface Drop {
  request?: (m: JSONRPCMessage) => boolean;
  reply?: (m: JSONRPCMessage) => boolean;
}

/** A gateway with `scope` on `store` in front of a memory server writing `memory`; `drop` loses client messages. */
async function start(store: Store, memory: string, scope: string, drop: Drop = {}) {
  const upstream = new StdioClientTransport({
    command: process.execPath,
    args: [MEMORY],
    env: { ...(process.env as Record<string, string>), MEMORY_FILE_PATH: memory },
    stderr: "ignore",
  });
  const upstreamCalls: string[] = [];
  const send = upstream.send.bind(upstream);
  upstream.send = (message: JSONRPCMessage) => {
    if ("method" in message && message.method === "tools/call") {
      upstreamCalls.push(String((message.params as { name: string }).name));
    }
    return send(message);
  };
  const [clientSide, gatewaySide] = InMemoryTransport.createLinkedPair();
  const toGateway = clientSide.send.bind(clientSide);
  clientSide.send = (message, options) =>
    drop.request?.(message) ? Promise.resolve() : toGateway(message, options);
  const toClient = gatewaySide.send.bind(gatewaySide);
  gatewaySide.send = (message, options) =>
    drop.reply?.(message) ? Promise.resolve() : toClient(message, options);
  const gateway = mcpGateway({ upstream, client: gatewaySide, store, scope });
  await gateway.start();
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(clientSide);
  return {
    client,
    upstreamCalls,
    close: async () => {
      await client.close();
      await gateway.closed;
    },
  };
}

const setup = () => join(runs.next(), "memory.jsonl");

const person = (name: string) => ({ entities: [{ name, entityType: "person", observations: ["met"] }] });
const ctx = (key: string) => ({
  idempotencyKey: key,
  taskId: "t",
  tool: "create_entities",
  attempt: 1,
  signal: new AbortController().signal,
});
const keyed = (args: Record<string, unknown>, key: string, lookup = false) => ({
  name: "create_entities",
  arguments: args,
  _meta: { [IDEMPOTENCY_KEY_META]: key, ...(lookup ? { [LOOKUP_META]: true } : {}) },
});

describe("lookups through the MCP gateway, in front of @modelcontextprotocol/server-memory", () => {
  it("completed: the recorded result, never forwarded; unknown: not done; another scope: as unknown", async () => {
    const memory = setup();
    const store = memoryStore();
    const a = await start(store, memory, "acct-a");
    const b = await start(store, memory, "acct-b");
    try {
      const first = await a.client.callTool(keyed(person("alice"), "k-alice"));
      expect(entities(memory, "alice")).toBe(1);
      expect(a.upstreamCalls).toEqual(["create_entities"]);
      // The memory server would write alice again if the lookup reached it (it skips existing names only).
      writeFileSync(memory, "");

      const reconcile = mcpLookupReconcile(a.client, { name: "create_entities" });
      expect(await reconcile(person("alice"), ctx("k-alice"))).toEqual({
        status: "done",
        result: { content: first.content, structuredContent: first.structuredContent },
        evidence: { lookup: "completed" },
      });
      expect(await reconcile(person("carol"), ctx("k-carol"))).toEqual({
        status: "not_done",
        evidence: { lookup: "unknown" },
      });
      const across = await b.client.callTool(keyed(person("alice"), "k-alice", true));
      const unsent = await b.client.callTool(keyed(person("alice"), "k-never", true));
      expect(across).toEqual(unsent);
      expect(across._meta?.[LOOKUP_STATE_META]).toBe("unknown");
      // Without a key a lookup is refused here, not forwarded.
      const bare = await a.client.callTool({
        name: "create_entities",
        arguments: person("dave"),
        _meta: { [LOOKUP_META]: true },
      });
      expect(bare._meta?.[REFUSAL_META]).toBe("key_missing");

      expect(a.upstreamCalls).toEqual(["create_entities"]);
      expect(b.upstreamCalls).toEqual([]);
      for (const name of ["alice", "carol", "dave"]) expect(entities(memory, name)).toBe(0);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("a reconciler resolves the lost answers of an unguarded tool behind the gateway; no effect repeats", async () => {
    const memory = setup();
    const store = memoryStore();
    const isCall = (m: JSONRPCMessage, name: string) =>
      "method" in m &&
      m.method === "tools/call" &&
      (m.params as { arguments?: { entities?: { name: string }[] } }).arguments?.entities?.[0]?.name === name;
    // Each loss happens once: the first answer to "lost-reply", the first request for "lost-request".
    let lostId: string | number | undefined;
    let requestLost = false;
    let replyLost = false;
    const gateway = await start(store, memory, "acct-a", {
      request: (m) => {
        if (lostId === undefined && isCall(m, "lost-reply") && "id" in m) lostId = m.id;
        if (requestLost || !isCall(m, "lost-request")) return false;
        requestLost = true;
        return true;
      },
      reply: (m) => {
        if (replyLost || !("id" in m) || "method" in m || m.id !== lostId) return false;
        replyLost = true;
        return true;
      },
    });
    try {
      const ledger = memoryStore();
      const harness = createHarness({ store: ledger, retry: { retries: 0 } });
      const tool = mcpTool(gateway.client, { name: "create_entities", effect: "unguarded", timeoutMs: 300 });
      const lostReply = person("lost-reply");
      const lostRequest = person("lost-request");
      await expect(harness.call("task", tool, lostReply)).rejects.toBeInstanceOf(OutcomeUnknownError);
      await expect(harness.call("task", tool, lostRequest)).rejects.toBeInstanceOf(OutcomeUnknownError);
      expect(entities(memory, "lost-reply")).toBe(1);
      expect(entities(memory, "lost-request")).toBe(0);

      const reconciling = mcpTool(gateway.client, {
        name: "create_entities",
        effect: "unguarded",
        reconcile: mcpLookupReconcile(gateway.client, { name: "create_entities" }),
      });
      const reconciler = createReconciler({ store: ledger, tools: [reconciling], id: "gateway-reconciler" });
      const report = await reconciler.sweep();
      await reconciler.stop();
      expect(report).toMatchObject({ done: 1, notDone: 1, undecided: 0, failed: 0, conflict: 0 });
      expect(gateway.upstreamCalls).toEqual(["create_entities"]);

      // The agent comes back: the lost answer replays from the ledger, the lost request runs now, once.
      const calls = mcpTool(gateway.client, { name: "create_entities", effect: "unguarded" });
      const replayed = await harness.call("task", calls, lostReply);
      expect(replayed.structuredContent).toEqual({ entities: lostReply.entities });
      expect(gateway.upstreamCalls).toEqual(["create_entities"]);
      await harness.call("task", calls, lostRequest);
      expect(gateway.upstreamCalls).toEqual(["create_entities", "create_entities"]);
      expect(entities(memory, "lost-reply")).toBe(1);
      expect(entities(memory, "lost-request")).toBe(1);
    } finally {
      await gateway.close();
    }
  });
});

describe("lookups through the MCP gateway, in front of an SDK server that holds a call", () => {
  it("a call still running reads in_flight: undecided, and the upstream runs it once", async () => {
    let sends = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let entered!: () => void;
    const running = new Promise<void>((resolve) => (entered = resolve));
    const server = new McpServer({ name: "owner", version: "1.0.0" });
    server.registerTool("send", { inputSchema: { to: z.string() } }, async () => {
      sends++;
      entered();
      await gate;
      return { content: [{ type: "text", text: "sent" }] };
    });
    const [serverSide, upstream] = InMemoryTransport.createLinkedPair();
    const [clientSide, gatewaySide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const gateway = mcpGateway({ upstream, client: gatewaySide, store: memoryStore(), waitMs: 60_000 });
    await gateway.start();
    const client = new Client({ name: "agent", version: "1.0.0" });
    await client.connect(clientSide);
    try {
      const call = { name: "send", arguments: { to: "a" }, _meta: { [IDEMPOTENCY_KEY_META]: "k" } };
      const first = client.callTool(call);
      await running;
      const lookup = await client.callTool({ ...call, _meta: { ...call._meta, [LOOKUP_META]: true } });
      expect(lookup._meta?.[LOOKUP_STATE_META]).toBe("in_flight");
      expect(await mcpLookupReconcile(client, { name: "send" })({ to: "a" }, ctx("k"))).toBeUndefined();
      open();
      await first;
      expect(sends).toBe(1);
    } finally {
      await client.close();
    }
  });
});
