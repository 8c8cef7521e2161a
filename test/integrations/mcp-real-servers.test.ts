import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness, memoryStore, OutcomeUnknownError } from "../../src/index.js";
import { isMcpToolError, type McpListClient, McpToolError, mcpTool, mcpTools } from "../../src/mcp/index.js";

// Published MCP servers nobody here wrote, over stdio, through mcpTools with no trust in them: every tool is
// unguarded. An error result says nothing about the effect (the SDK answers a handler that threw after acting the
// same way), so by default it ends in OutcomeUnknownError and the identical call is not sent again; a classifier
// declared for the refusals we know these servers answer before touching anything frees the key. The wire count is
// taken at the transport, and the effects are read from the disk and the memory server's own file, never through
// idemkey.
const require = createRequire(import.meta.url);
const FILESYSTEM = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js");
const MEMORY = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");

const dir = mkdtempSync(join(tmpdir(), "idemkey-mcp-real-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let dirs = 0;

interface Connected {
  client: McpListClient;
  /** tools/call requests that left the client, by tool name. */
  calls: string[];
  close: () => Promise<void>;
}

type Line = "v1" | "v2";
async function start(line: Line, args: string[], env: Record<string, string> = {}): Promise<Connected> {
  const params = {
    command: process.execPath,
    args,
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: "ignore" as const,
  };
  const transport = line === "v1" ? new StdioV1(params) : new StdioV2(params);
  const calls: string[] = [];
  const send = transport.send.bind(transport);
  transport.send = ((message: { method?: string; params?: { name?: string } }, ...rest: never[]) => {
    if (message.method === "tools/call") calls.push(String(message.params?.name));
    return (send as (...a: unknown[]) => Promise<void>)(message, ...rest);
  }) as typeof transport.send;
  const client =
    line === "v1"
      ? new ClientV1({ name: "agent", version: "1.0.0" })
      : new ClientV2({ name: "agent", version: "1.0.0" });
  await (client.connect as (t: unknown) => Promise<void>)(transport);
  return { client: client as McpListClient, calls, close: () => client.close() };
}

/** A classifier for error answers whose text starts with one of `prefixes`: what a user who read the server writes. */
const answeredBefore =
  (...prefixes: string[]) =>
  (error: unknown) =>
    isMcpToolError(error) && prefixes.some((p) => String(error.result.content[0]?.text).startsWith(p));

describe.each(["v1", "v2"] as const)("an untrusted server's error results, with the %s client", (line) => {
  it("@modelcontextprotocol/server-filesystem: a refusal is an unknown outcome by default; declared, it frees the key", async () => {
    const root = join(dir, `fs-${++dirs}`);
    mkdirSync(root);
    writeFileSync(join(root, "a.txt"), "a");
    writeFileSync(join(root, "b.txt"), "b");
    const fs = await start(line, [FILESYSTEM, root]);
    try {
      const plain = await mcpTools(fs.client, { timeoutMs: 30_000 });
      expect(plain.write_file?.effect).toBe("unguarded");
      const store = memoryStore();
      const harness = createHarness({ store });
      const outside = join(dir, `outside-${dirs}.txt`);

      // Nobody vouches for the answer: the server may have written before it failed, so the key stays locked.
      const outsideRoot = { path: outside, content: "x" };
      for (let round = 1; round <= 2; round++) {
        const error = await harness
          .call("task-plain", plain.write_file!.tool, outsideRoot)
          .catch((e: unknown) => e);
        expect(error, `round ${round}`).toBeInstanceOf(OutcomeUnknownError);
        // The first carries the server's answer; the second finds the key locked, and sends nothing.
        if (round === 1) expect((error as OutcomeUnknownError).cause).toBeInstanceOf(McpToolError);
      }
      expect(fs.calls).toEqual(["write_file"]);

      // The refusals this server answers before touching the disk, declared by whoever connected it.
      const tools = await mcpTools(fs.client, {
        timeoutMs: 30_000,
        noEffect: answeredBefore("Access denied", "Destination already exists", "MCP error -32602"),
      });
      const failing: [string, { [k: string]: unknown }][] = [
        ["write_file", { path: outside, content: "x" }], // outside the allowed root
        ["move_file", { source: join(root, "a.txt"), destination: join(root, "b.txt") }], // onto an existing file
        ["write_file", { path: join(root, "c.txt") }], // invalid arguments: no content
      ];
      for (const [name, args] of failing) {
        for (let round = 1; round <= 2; round++) {
          const before = fs.calls.length;
          const error = await harness.call("task-fs", tools[name]!.tool, args).catch((e: unknown) => e);
          expect(error, `${name} round ${round}`).toBeInstanceOf(McpToolError);
          expect(error).not.toBeInstanceOf(OutcomeUnknownError);
          // The identical call went to the server again: the first answer left no record that blocks it.
          expect(fs.calls.length).toBe(before + 1);
        }
      }
      const unknownTool = mcpTool(fs.client, {
        name: "no_such_tool",
        effect: "unguarded",
        noEffect: answeredBefore("MCP error -32602"),
      });
      const error = await harness.call("task-fs", unknownTool, {}).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpToolError);
      expect(existsSync(outside)).toBe(false);
      expect(readFileSync(join(root, "b.txt"), "utf8")).toBe("b");
      expect(existsSync(join(root, "c.txt"))).toBe(false);

      // A call that succeeds is recorded: the identical call is answered from the ledger, not sent again.
      const write = { path: join(root, "d.txt"), content: "once" };
      await harness.call("task-fs", tools.write_file!.tool, write);
      const sent = fs.calls.length;
      await harness.call("task-fs", tools.write_file!.tool, write);
      expect(fs.calls.length).toBe(sent);
      expect(readFileSync(join(root, "d.txt"), "utf8")).toBe("once");
    } finally {
      await fs.close();
    }
  });

  it("@modelcontextprotocol/server-memory: a missing entity is unknown unless declared; a created entity is created once", async () => {
    const file = join(dir, `memory-${++dirs}.jsonl`);
    const memory = await start(line, [MEMORY], { MEMORY_FILE_PATH: file });
    try {
      const harness = createHarness();
      const observe = { observations: [{ entityName: "Nobody", contents: ["likes tea"] }] };
      const plain = await mcpTools(memory.client, { timeoutMs: 30_000 });
      const unknown = await harness.call("task-plain", plain.add_observations!.tool, observe).catch((e) => e);
      expect(unknown).toBeInstanceOf(OutcomeUnknownError);
      expect(memory.calls.filter((c) => c === "add_observations")).toHaveLength(1);

      const tools = await mcpTools(memory.client, {
        timeoutMs: 30_000,
        noEffect: answeredBefore("Entity with name"),
      });
      for (let round = 1; round <= 2; round++) {
        const error = await harness
          .call("task-mem", tools.add_observations!.tool, observe)
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(McpToolError);
        expect((error as McpToolError).message).toMatch(/Nobody not found/);
      }
      expect(memory.calls.filter((c) => c === "add_observations")).toHaveLength(3);

      const entity = { entities: [{ name: "Dana", entityType: "person", observations: ["customer"] }] };
      await harness.call("task-mem", tools.create_entities!.tool, entity);
      await harness.call("task-mem", tools.create_entities!.tool, entity);
      expect(memory.calls.filter((c) => c === "create_entities")).toHaveLength(1);
      const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
      expect(lines.map((l) => JSON.parse(l).name)).toEqual(["Dana"]);
    } finally {
      await memory.close();
    }
  });
});
