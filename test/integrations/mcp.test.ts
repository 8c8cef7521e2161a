import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import {
  createHarness,
  type HarnessEvent,
  IdempotencyConflictError,
  idempotencyKey,
  memoryStore,
} from "../../src/index.js";
import {
  IDEMPOTENCY_KEY_META,
  InvalidIdempotencyKeyError,
  idempotencyKeyOf,
  type McpCallToolResult,
  McpToolError,
  mcpDedupe,
  mcpTool,
  mcpTools,
  REFUSAL_META,
  REPLAYED_META,
} from "../../src/mcp/index.js";
import { issueServer, readEffects, type ServerHooks } from "./fixtures/mcp-server.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-mcp-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const effectsFile = () => join(dir, `effects-${++files}.jsonl`);

const ARGS = { repo: "acme/api", title: "Login fails on Safari" };

interface Wire {
  /** Every tools/call request the client sent, as it left the client. */
  calls: { name: string; key: unknown; args: unknown }[];
}

/**
 * Connects a client to `server` over the SDK's in-memory transport. `clientId` plays an authenticated principal
 * (what the SDK's bearer-auth middleware puts in `extra.authInfo`); `drop` loses chosen responses on their way back.
 */
async function connect(
  server: McpServer,
  options: { clientId?: string; drop?: (message: JSONRPCMessage) => boolean } = {},
): Promise<{ client: Client; wire: Wire }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const wire: Wire = { calls: [] };
  const send = clientSide.send.bind(clientSide);
  clientSide.send = (message, sendOptions) => {
    if ("method" in message && message.method === "tools/call") {
      const params = message.params as { name: string; arguments?: unknown; _meta?: Record<string, unknown> };
      wire.calls.push({
        name: params.name,
        key: params._meta?.[IDEMPOTENCY_KEY_META],
        args: params.arguments,
      });
    }
    const authInfo =
      options.clientId === undefined ? undefined : { token: "t", clientId: options.clientId, scopes: [] };
    return send(message, authInfo ? { ...sendOptions, authInfo } : sendOptions);
  };
  const reply = serverSide.send.bind(serverSide);
  serverSide.send = (message, sendOptions) =>
    options.drop?.(message) ? Promise.resolve() : reply(message, sendOptions);
  await server.connect(serverSide);
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(clientSide);
  return { client, wire };
}

const fastRetries = { minDelayMs: 1, maxDelayMs: 5, jitter: false };

describe("mcpTool and mcpDedupe over the SDK's in-memory transport", () => {
  it("retries a call whose response was lost with the same key; the server replays it: one effect", async () => {
    const file = effectsFile();
    let lost = false;
    const { client, wire } = await connect(issueServer(memoryStore(), file), {
      drop: (m) => {
        if (lost || !("result" in m && "structuredContent" in m.result)) return false;
        lost = true;
        return true;
      },
    });
    const events: HarnessEvent[] = [];
    const harness = createHarness({ retry: fastRetries, onEvent: (e) => events.push(e) });
    const tool = mcpTool(client, { name: "create_issue", effect: "keyed", timeoutMs: 500 });

    const result = await harness.call("conversation-1", tool, ARGS);

    const key = idempotencyKey("conversation-1", "create_issue", ARGS);
    // On a loaded machine a replay may time out as well and be retried again: what matters is the same key each time.
    expect(wire.calls.length).toBeGreaterThanOrEqual(2);
    expect(wire.calls).toEqual(wire.calls.map(() => ({ name: "create_issue", key, args: ARGS })));
    expect(events[0]?.type).toBe("retried");
    expect(events.at(-1)?.type).toBe("executed");
    expect(result._meta?.[REPLAYED_META]).toBe(true);
    const effects = readEffects(file);
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatchObject({ tool: "create_issue", key, args: ARGS });
    await client.close();
  });

  it("replays the saved result to another harness that calls with the same key", async () => {
    const file = effectsFile();
    const { client } = await connect(issueServer(memoryStore(), file));
    const tool = mcpTool(client, { name: "create_issue", effect: "keyed" });
    // Two harnesses with their own memory ledgers: a restarted agent process that lost its ledger.
    const first = await createHarness().call("job-42", tool, ARGS);
    const again = await createHarness().call("job-42", tool, ARGS);

    expect(first._meta?.[REPLAYED_META]).toBeUndefined();
    expect(again._meta?.[REPLAYED_META]).toBe(true);
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(again.content).toEqual(first.content);
    expect(readEffects(file)).toHaveLength(1);
    // Another task is another key: it runs.
    await createHarness().call("job-43", tool, ARGS);
    expect(readEffects(file)).toHaveLength(2);
    await client.close();
  });

  it("runs a call without a key every time (a plain MCP client)", async () => {
    const file = effectsFile();
    const { client } = await connect(issueServer(memoryStore(), file));
    await client.callTool({ name: "create_issue", arguments: ARGS });
    await client.callTool({ name: "create_issue", arguments: ARGS });
    expect(readEffects(file).map((e) => e.key)).toEqual([undefined, undefined]);
    await client.close();
  });

  it("refuses the same key with other arguments: IdempotencyConflictError, and the tool does not run", async () => {
    const file = effectsFile();
    const { client } = await connect(issueServer(memoryStore(), file));
    // The identity makes a re-worded title the same call, so the second harness sends the first one's key.
    const tool = mcpTool(client, {
      name: "create_issue",
      effect: "keyed",
      identity: (args: { repo: string; title: string }) => ({ repo: args.repo }),
    });
    await createHarness().call("t-1", tool, ARGS);
    const events: HarnessEvent[] = [];
    const other = createHarness({ retry: fastRetries, onEvent: (e) => events.push(e) });
    const error = await other.call("t-1", tool, { ...ARGS, title: "Login broken" }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(IdempotencyConflictError);
    expect((error as IdempotencyConflictError).key).toBe(
      idempotencyKey("t-1", "create_issue", { repo: ARGS.repo }),
    );
    expect(events.map((e) => e.type)).toEqual(["failed"]);
    expect(readEffects(file)).toHaveLength(1);
    await client.close();
  });

  it("scopes keys by the authenticated client: the same key from another principal runs on its own", async () => {
    const file = effectsFile();
    const store = memoryStore();
    const alice = await connect(issueServer(store, file), { clientId: "alice" });
    const bob = await connect(issueServer(store, file), { clientId: "bob" });
    const call = { name: "create_issue", arguments: ARGS, _meta: { [IDEMPOTENCY_KEY_META]: "k-123" } };

    const a1 = (await alice.client.callTool(call)) as CallToolResult;
    const b1 = (await bob.client.callTool(call)) as CallToolResult;
    const a2 = (await alice.client.callTool(call)) as CallToolResult;

    expect(readEffects(file).map((e) => e.clientId)).toEqual(["alice", "bob"]);
    expect([a1, b1, a2].map((r) => r._meta?.[REPLAYED_META])).toEqual([undefined, undefined, true]);
    await alice.client.close();
    await bob.client.close();
  });

  it("refuses a repeat while the first call runs, and the retry gets the saved result", async () => {
    const file = effectsFile();
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const hooks: ServerHooks = {
      gate: async () => {
        started();
        await released;
      },
    };
    const refusals: unknown[] = [];
    const { client } = await connect(issueServer(memoryStore(), file, hooks), {
      drop: (m) => {
        const meta = "result" in m ? (m.result._meta as Record<string, unknown> | undefined) : undefined;
        if (meta?.[REFUSAL_META] !== undefined) {
          refusals.push(meta[REFUSAL_META]);
          if (refusals.length === 1) release();
        }
        return false;
      },
    });
    const tool = mcpTool(client, { name: "slow_issue", effect: "keyed" });
    const first = createHarness().call("t-2", tool, ARGS);
    await running;
    const events: HarnessEvent[] = [];
    const second = createHarness({ retry: { ...fastRetries, retries: 50 }, onEvent: (e) => events.push(e) });
    const [r1, r2] = await Promise.all([first, second.call("t-2", tool, ARGS)]);

    expect(refusals[0]).toBe("key_in_flight");
    expect(events.filter((e) => e.type === "retried").length).toBeGreaterThanOrEqual(1);
    expect(r1._meta?.[REPLAYED_META]).toBeUndefined();
    expect(r2._meta?.[REPLAYED_META]).toBe(true);
    expect(readEffects(file)).toHaveLength(1);
    await client.close();
  });

  it("saves a returned error result and replays it to the same key: the tool ran once (Stripe's rule)", async () => {
    const file = effectsFile();
    const { client } = await connect(issueServer(memoryStore(), file, { failures: [true] }));
    const harness = createHarness({ retry: fastRetries });
    const tool = mcpTool(client, { name: "flaky_issue", effect: "keyed" });

    const error = await harness.call("t-3", tool, ARGS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpToolError);
    expect((error as McpToolError).message).toContain("tracker is down");
    // The answer carries no no-effect mark: a keyed call is released on the client, and its repeat reaches the
    // server with the same key, which answers what the tool answered the first time instead of running it again.
    const again = await harness.call("t-3", tool, ARGS).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(McpToolError);
    expect((again as McpToolError).result._meta?.[REPLAYED_META]).toBe(true);
    expect((again as McpToolError).message).toContain("tracker is down");
    expect(readEffects(file)).toHaveLength(1);
    await client.close();
  });

  it("releases an error result the server's save option declines: the next call with the key runs the tool again", async () => {
    const file = effectsFile();
    const save = (result: McpCallToolResult) => result.isError !== true;
    const { client } = await connect(issueServer(memoryStore(), file, { failures: [true], save }));
    const harness = createHarness({ retry: fastRetries });
    const tool = mcpTool(client, { name: "flaky_issue", effect: "keyed" });

    expect(await harness.call("t-4", tool, ARGS).catch((e: unknown) => e)).toBeInstanceOf(McpToolError);
    const ok = await harness.call("t-4", tool, ARGS);
    expect(ok.isError).toBeUndefined();
    await harness.call("t-4", tool, ARGS);
    // The second call ran the tool again; the third was replayed from the harness's own ledger.
    expect(readEffects(file)).toHaveLength(2);
    await client.close();
  });

  it("refuses an unusable key in _meta before the tool runs", async () => {
    const file = effectsFile();
    const { client } = await connect(issueServer(memoryStore(), file));
    for (const bad of ["has space", "", 42, "x".repeat(256)]) {
      const result = (await client.callTool({
        name: "create_issue",
        arguments: ARGS,
        _meta: { [IDEMPOTENCY_KEY_META]: bad },
      })) as CallToolResult;
      expect(result.isError).toBe(true);
      expect(result._meta?.[REFUSAL_META]).toBe("key_invalid");
    }
    expect(readEffects(file)).toHaveLength(0);
    await client.close();
  });

  it("refuses a call without a key when the key is required", async () => {
    const file = effectsFile();
    const { McpServer } = await import("@modelcontextprotocol/sdk/server/mcp.js");
    const { z } = await import("zod");
    const server = new McpServer({ name: "strict", version: "1.0.0" });
    const idempotent = mcpDedupe({ store: memoryStore(), required: true });
    let runs = 0;
    server.registerTool(
      "charge",
      { inputSchema: { cents: z.number() } },
      idempotent("charge", async () => {
        runs++;
        return { content: [{ type: "text", text: "charged" }] };
      }),
    );
    const { client } = await connect(server);
    const result = (await client.callTool({ name: "charge", arguments: { cents: 5 } })) as CallToolResult;
    expect(result._meta?.[REFUSAL_META]).toBe("key_missing");
    expect(runs).toBe(0);
    expect(readEffects(file)).toHaveLength(0);
    await client.close();
  });
});

describe("mcpTools", () => {
  it("keeps the server's tool definitions unchanged: the key is not in any schema the model sees", async () => {
    const { client } = await connect(issueServer(memoryStore(), effectsFile()));
    const { tools } = await client.listTools();
    const listed = await mcpTools(client);
    expect(Object.keys(listed).sort()).toEqual(tools.map((t) => t.name).sort());
    for (const definition of tools) {
      expect(listed[definition.name]!.definition).toEqual(definition);
      expect(Object.keys(definition.inputSchema.properties ?? {}).sort()).toEqual(["repo", "title"]);
    }
    await client.close();
  });

  it("ignores annotations unless told to trust the server", async () => {
    const file = effectsFile();
    const { client } = await connect(issueServer(memoryStore(), file));
    const untrusted = await mcpTools(client);
    // create_issue claims readOnlyHint, plain_issue idempotentHint: hints from an untrusted server.
    for (const name of ["create_issue", "plain_issue", "slow_issue", "flaky_issue"]) {
      expect([untrusted[name]!.effect, untrusted[name]!.effectFrom]).toEqual(["unguarded", "default"]);
    }
    const trusted = await mcpTools(client, {
      trustAnnotations: true,
      effects: { flaky_issue: "keyed" },
      defaultEffect: "keyed",
      keyPrefix: "tracker.",
    });
    expect(trusted.create_issue!.effect).toBe("read");
    expect(trusted.plain_issue!.effect).toBe("idempotent");
    expect([trusted.flaky_issue!.effect, trusted.flaky_issue!.effectFrom]).toEqual(["keyed", "effects"]);
    expect([trusted.slow_issue!.effect, trusted.slow_issue!.effectFrom]).toEqual(["keyed", "default"]);
    expect(trusted.plain_issue!.tool.name).toBe("tracker.plain_issue");

    // plain_issue has no dedupe: its handler forwards idempotencyKeyOf(extra), derived from the prefixed name.
    await createHarness().call("t-4", trusted.plain_issue!.tool, ARGS);
    expect(readEffects(file).map((e) => e.key)).toEqual([idempotencyKey("t-4", "tracker.plain_issue", ARGS)]);
    await client.close();
  });

  it("rejects an effect for a tool the server does not list, and bad options", async () => {
    const { client } = await connect(issueServer(memoryStore(), effectsFile()));
    await expect(mcpTools(client, { effects: { create_isue: "keyed" } })).rejects.toThrow(
      /options\.effects\.create_isue names a tool the server does not list/,
    );
    await expect(mcpTools(client, { effects: { create_issue: "once" as never } })).rejects.toThrow(TypeError);
    await expect(mcpTools(client, { trustAnnotations: "yes" as never })).rejects.toThrow(/trustAnnotations/);
    await expect(mcpTools(client, { defaultEffect: "maybe" as never })).rejects.toThrow(/defaultEffect/);
    await expect(mcpTools(client, { noEffect: "yes" as never })).rejects.toThrow(/options\.noEffect/);
    await client.close();
  });
});

describe("option and input validation", () => {
  const client = { callTool: async () => ({ content: [] }) } as unknown as Client;

  it("mcpTool names the option at fault", () => {
    expect(() => mcpTool(client, { name: "", effect: "keyed" })).toThrow(/options\.name/);
    expect(() => mcpTool(client, { name: "x", effect: "keyed", keyName: "" })).toThrow(/options\.keyName/);
    expect(() => mcpTool(client, { name: "x", effect: "keyed", timeoutMs: 0 })).toThrow(/options\.timeoutMs/);
    expect(() => mcpTool(client, { name: "x", effect: "sometimes" as never })).toThrow(/tool\.effect/);
    expect(() => mcpTool({} as Client, { name: "x", effect: "keyed" })).toThrow(/callTool/);
  });

  it("mcpDedupe names the option at fault", () => {
    expect(() => mcpDedupe({ store: {} as never })).toThrow(/options\.store/);
    expect(() => mcpDedupe({ store: memoryStore(), leaseMs: -1 })).toThrow(/options\.leaseMs/);
    expect(() => mcpDedupe({ store: memoryStore(), retentionMs: Number.NaN })).toThrow(
      /options\.retentionMs/,
    );
    expect(() => mcpDedupe({ store: memoryStore(), required: "no" as never })).toThrow(/options\.required/);
    expect(() => mcpDedupe({ store: memoryStore() })("", async () => ({ content: [] }))).toThrow(/name/);
  });

  it("idempotencyKeyOf reads the key, and names the field of an unusable one", () => {
    expect(idempotencyKeyOf({})).toBeUndefined();
    expect(idempotencyKeyOf({ _meta: { progressToken: 1 } })).toBeUndefined();
    expect(idempotencyKeyOf({ _meta: { [IDEMPOTENCY_KEY_META]: "a1-B2_c3" } })).toBe("a1-B2_c3");
    for (const bad of [42, null, "", "two words", 'quo"te', "com,ma", "é", "x".repeat(256)]) {
      let error: unknown;
      try {
        idempotencyKeyOf({ _meta: { [IDEMPOTENCY_KEY_META]: bad } });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidIdempotencyKeyError);
      expect((error as InvalidIdempotencyKeyError).path).toBe('params._meta["dev.idemkey/idempotency-key"]');
    }
  });

  it("uses a spec-conformant _meta key name: a dotted reverse-DNS prefix whose second label is not mcp", () => {
    for (const name of [IDEMPOTENCY_KEY_META, REPLAYED_META, REFUSAL_META]) {
      const [prefix, rest] = name.split("/");
      const labels = prefix!.split(".");
      expect(labels.every((l) => /^[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?$/.test(l))).toBe(true);
      expect(["modelcontextprotocol", "mcp"]).not.toContain(labels[1]);
      expect(labels.slice(0, -1)).not.toContain("mcp");
      expect(rest).toMatch(/^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/);
    }
  });
});

describe("over stdio, with the server in a child process", () => {
  const script = fileURLToPath(new URL("./fixtures/mcp-stdio-server.ts", import.meta.url));

  async function start(db: string, effects: string): Promise<{ client: Client; pid: number | null }> {
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

  it("a call retried after both processes restarted arrives with the same key and is replayed: one effect", async () => {
    const db = join(dir, "stdio.db");
    const effects = effectsFile();
    const args = { repo: "acme/web", title: "Checkout 500s" };

    const one = await start(db, effects);
    const first = await createHarness().call(
      "webhook-evt_1Nx",
      mcpTool(one.client, { name: "create_issue", effect: "keyed" }),
      args,
    );
    await one.client.close();

    // A new agent process (its memory ledger gone) and a new server process on the same SQLite file.
    const two = await start(db, effects);
    const again = await createHarness().call(
      "webhook-evt_1Nx",
      mcpTool(two.client, { name: "create_issue", effect: "keyed" }),
      args,
    );
    await two.client.close();

    expect(two.pid).not.toBe(one.pid);
    const recorded = readEffects(effects);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({
      pid: one.pid,
      key: idempotencyKey("webhook-evt_1Nx", "create_issue", args),
    });
    expect(again._meta?.[REPLAYED_META]).toBe(true);
    expect(again.structuredContent).toEqual(first.structuredContent);
  });
});
