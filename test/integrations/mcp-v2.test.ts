import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client, InMemoryTransport, type JSONRPCMessage } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import type { McpServer } from "@modelcontextprotocol/server";
import { afterAll, describe, expect, it } from "vitest";
import {
  createHarness,
  type HarnessEvent,
  IdempotencyConflictError,
  idempotencyKey,
  memoryStore,
  OutcomeUnknownError,
} from "../../src/index.js";
import {
  IDEMPOTENCY_KEY_META,
  McpToolError,
  mcpLookupReconcile,
  mcpTool,
  mcpTools,
  REPLAYED_META,
} from "../../src/mcp/index.js";
import { readEffects } from "./fixtures/mcp-server.js";
import { issueServerV2 } from "./fixtures/mcp-server-v2.js";

// idemkey/mcp against the MCP SDK's v2 line: @modelcontextprotocol/server and @modelcontextprotocol/client.
const dir = mkdtempSync(join(tmpdir(), "idemkey-mcp2-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const effectsFile = () => join(dir, `effects-${++files}.jsonl`);
const ARGS = { repo: "acme/api", title: "Login fails on Safari" };
const fastRetries = { minDelayMs: 1, maxDelayMs: 5, jitter: false };

/** A v2 client on a v2 server over the SDK's in-memory transport; `drop` loses chosen messages to the client. */
async function connect(server: McpServer, drop?: (message: JSONRPCMessage) => boolean) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const keys: unknown[] = [];
  const send = clientSide.send.bind(clientSide);
  clientSide.send = (message, options) => {
    if ("method" in message && message.method === "tools/call") {
      keys.push((message.params as { _meta?: Record<string, unknown> })._meta?.[IDEMPOTENCY_KEY_META]);
    }
    return send(message, options);
  };
  const reply = serverSide.send.bind(serverSide);
  serverSide.send = (message, options) => (drop?.(message) ? Promise.resolve() : reply(message, options));
  await server.connect(serverSide);
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(clientSide);
  return { client, keys };
}

describe("mcpTool and mcpDedupe on the v2 SDK, in memory", () => {
  it("retries a call whose answer was lost with the same key in _meta; the v2 server replays it: one effect", async () => {
    const file = effectsFile();
    let lost = false;
    const { client, keys } = await connect(issueServerV2(memoryStore(), file), (m) => {
      if (lost || !("result" in m && "structuredContent" in m.result)) return false;
      lost = true;
      return true;
    });
    const events: HarnessEvent[] = [];
    const harness = createHarness({ retry: fastRetries, onEvent: (e) => events.push(e) });
    const result = await harness.call(
      "conversation-1",
      mcpTool(client, { name: "create_issue", effect: "keyed", timeoutMs: 500 }),
      ARGS,
    );

    const key = idempotencyKey("conversation-1", "create_issue", ARGS);
    expect(keys.length).toBeGreaterThanOrEqual(2);
    expect(keys).toEqual(keys.map(() => key));
    expect(events[0]?.type).toBe("retried");
    expect(result._meta?.[REPLAYED_META]).toBe(true);
    expect(readEffects(file)).toEqual([expect.objectContaining({ tool: "create_issue", key, args: ARGS })]);
    await client.close();
  });

  it("a lost answer of an unguarded tool is the one unknown outcome: OutcomeUnknownError after timeoutMs, not resent", async () => {
    const file = effectsFile();
    const { client, keys } = await connect(
      issueServerV2(memoryStore(), file),
      (m) => "result" in m && "content" in m.result,
    );
    const tools = await mcpTools(client, { timeoutMs: 200 });
    const harness = createHarness({ retry: fastRetries });
    const error = await harness.call("t-lost", tools.create_issue!.tool, ARGS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    // Sent once; the server acted once; a later identical call is not sent until someone resolves the record.
    expect(keys).toHaveLength(1);
    expect(readEffects(file)).toHaveLength(1);
    await expect(harness.call("t-lost", tools.create_issue!.tool, ARGS)).rejects.toBeInstanceOf(
      OutcomeUnknownError,
    );
    expect(keys).toHaveLength(1);
    await client.close();
  });

  it("refuses the key reused for other arguments: IdempotencyConflictError, and the tool does not run", async () => {
    const file = effectsFile();
    const { client } = await connect(issueServerV2(memoryStore(), file));
    const tool = mcpTool(client, {
      name: "create_issue",
      effect: "keyed",
      identity: (a: typeof ARGS) => a.repo,
    });
    await createHarness().call("t-1", tool, ARGS);
    const error = await createHarness()
      .call("t-1", tool, { ...ARGS, title: "Reworded" })
      .catch((e: unknown) => e);
    // Same identity, so the second harness sends the first key; the v2 server sees other arguments under it.
    expect(error).toBeInstanceOf(IdempotencyConflictError);
    expect(readEffects(file)).toHaveLength(1);
    await client.close();
  });

  it("maps trusted annotations of a v2 server, ignores them otherwise, and passes timeoutMs on", async () => {
    const { client } = await connect(issueServerV2(memoryStore(), effectsFile()));
    const untrusted = await mcpTools(client, { timeoutMs: 2_000 });
    expect(untrusted.create_issue?.effect).toBe("unguarded");
    const trusted = await mcpTools(client, { trustAnnotations: true });
    expect(trusted.create_issue).toMatchObject({ effect: "read", effectFrom: "annotations" });
    expect(trusted.create_issue?.definition.inputSchema).toMatchObject({ type: "object" });
    expect(JSON.stringify(trusted.create_issue?.definition)).not.toMatch(/idempotency|idemkey/i);
    await expect(mcpTools(client, { timeoutMs: 0 })).rejects.toThrow(/options\.timeoutMs/);
    await client.close();
  });

  it("an error result of an unguarded tool is an unknown outcome (not sent again) unless a classifier vouches for it", async () => {
    const file = effectsFile();
    const { client, keys } = await connect(issueServerV2(memoryStore(), file));
    const harness = createHarness();
    // bad_issue's answer carries no mark: the server may have acted before answering, so the key stays locked.
    const plain = await mcpTools(client);
    for (let i = 0; i < 2; i++) {
      const error = await harness.call("t-2", plain.bad_issue!.tool, ARGS).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      // The first carries the server's answer; the second finds the key locked, and sends nothing.
      if (i === 0) expect(((error as OutcomeUnknownError).cause as McpToolError).message).toMatch(/archived/);
    }
    expect(keys).toHaveLength(1);

    // Declared by whoever knows the server answers it before doing anything: the key is freed each time.
    const declared = await mcpTools(client, {
      noEffect: (e) => e instanceof McpToolError && /repo is archived/.test(e.message),
    });
    for (let i = 0; i < 2; i++) {
      const error = await harness.call("t-3", declared.bad_issue!.tool, ARGS).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpToolError);
    }
    expect(keys).toHaveLength(3);
    expect(readEffects(file).map((e) => e.tool)).toEqual(["bad_issue", "bad_issue", "bad_issue"]);
    await client.close();
  });
});

describe("the v2 SDK over stdio, with the server in a child process", () => {
  const script = fileURLToPath(new URL("./fixtures/mcp-stdio-server-v2.ts", import.meta.url));
  async function start(db: string, effects: string) {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", "tsx", script, db, effects],
      env: process.env as Record<string, string>,
      stderr: "inherit",
    });
    const client = new Client({ name: "agent", version: "1.0.0" });
    await client.connect(transport);
    return { client, pid: transport.pid };
  }

  it("a call repeated after both processes restarted arrives with the same key and is replayed: one effect", async () => {
    const db = join(dir, "stdio-v2.db");
    const effects = effectsFile();
    const one = await start(db, effects);
    const first = await createHarness().call(
      "webhook-evt_2",
      mcpTool(one.client, { name: "create_issue", effect: "keyed" }),
      ARGS,
    );
    await one.client.close();
    const two = await start(db, effects);
    const again = await createHarness().call(
      "webhook-evt_2",
      mcpTool(two.client, { name: "create_issue", effect: "keyed" }),
      ARGS,
    );
    await two.client.close();

    expect(two.pid).not.toBe(one.pid);
    expect(readEffects(effects)).toEqual([
      expect.objectContaining({ pid: one.pid, key: idempotencyKey("webhook-evt_2", "create_issue", ARGS) }),
    ]);
    expect(again._meta?.[REPLAYED_META]).toBe(true);
    expect(again.structuredContent).toEqual(first.structuredContent);
  });
});

describe("MCP key lookups on the v2 SDK, in memory", () => {
  it("mcpLookupReconcile with a v2 client asks a v2 server's mcpDedupe: done, then not done; nothing runs", async () => {
    const file = effectsFile();
    const { client } = await connect(issueServerV2(memoryStore(), file));
    const ran = await createHarness().call(
      "job-v2",
      mcpTool(client, { name: "create_issue", effect: "keyed" }),
      ARGS,
    );
    expect(readEffects(file)).toHaveLength(1);
    const reconcile = mcpLookupReconcile(client, { name: "create_issue" });
    const ctx = (key: string) => ({
      idempotencyKey: key,
      taskId: "job-v2",
      tool: "create_issue",
      attempt: 1,
      signal: new AbortController().signal,
    });
    expect(await reconcile(ARGS, ctx(idempotencyKey("job-v2", "create_issue", ARGS)))).toEqual({
      status: "done",
      result: { content: ran.content, structuredContent: ran.structuredContent },
      evidence: { lookup: "completed" },
    });
    expect(await reconcile(ARGS, ctx(idempotencyKey("job-v3", "create_issue", ARGS)))).toEqual({
      status: "not_done",
      evidence: { lookup: "unknown" },
    });
    expect(readEffects(file)).toHaveLength(1);
    await client.close();
  });
});
