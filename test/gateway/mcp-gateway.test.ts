import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { IDEMPOTENCY_KEY_META, REFUSAL_META, REPLAYED_META } from "../../src/mcp/meta.js";
import { mcpRecordKey } from "../../src/mcp/server/dedupe-call.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { entities, tempRuns, until } from "./support.js";

// Published MCP servers nobody here wrote, behind `idemkey gateway mcp` started from the CLI, driven by the SDK's
// real Client, with a hop process that loses answers or kills the server, and clients killed mid-call. The effects
// are counted in the servers' own state (the memory server's JSON-lines file, the files the filesystem server
// edits), never through idemkey.
const require = createRequire(import.meta.url);
const FILESYSTEM = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js");
const MEMORY = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");
const root = fileURLToPath(new URL("../../", import.meta.url));
const CLI = join(root, "src/cli/index.ts");
const HOP = fileURLToPath(new URL("./fixtures/hop.mjs", import.meta.url));
const CLIENT = fileURLToPath(new URL("./fixtures/client.mjs", import.meta.url));

const runs = tempRuns("idemkey-gateway-");

/** The command line of a gateway (through a hop when `hop` is given) in front of `upstream`. */
function gatewayCommand(db: string, upstream: string[], hop?: { marker: string; mode: string }): string[] {
  const gateway = [process.execPath, "--import", "tsx", CLI, "gateway", "mcp", "--store", `sqlite:${db}`];
  const line = [...gateway, "--", ...upstream];
  return hop ? [process.execPath, HOP, hop.marker, hop.mode, "--", ...line] : line;
}

async function connect(command: string[], env: Record<string, string> = {}) {
  const client = new Client({ name: "agent", version: "1.0.0" });
  const [file, ...args] = command;
  await client.connect(
    new StdioClientTransport({
      command: file!,
      args,
      cwd: root,
      env: { ...(process.env as Record<string, string>), ...env },
      stderr: "ignore",
    }),
  );
  return client;
}

const keyed = (name: string, args: Record<string, unknown>, key: string) => ({
  name,
  arguments: args,
  _meta: { [IDEMPOTENCY_KEY_META]: key },
});

function setup() {
  const run = runs.next();
  return { run, db: join(run, "gateway.db"), memory: join(run, "memory.jsonl"), marker: join(run, "marker") };
}

const alice = { entities: [{ name: "alice", entityType: "person", observations: ["met"] }] };

describe("idemkey gateway mcp, in front of @modelcontextprotocol/server-memory", () => {
  it("passes tools/list through, and a call whose answer was lost is replayed, not run again", async () => {
    const { db, memory, marker } = setup();
    const env = { MEMORY_FILE_PATH: memory };
    const client = await connect(
      gatewayCommand(db, [process.execPath, MEMORY], { marker, mode: "drop-answer" }),
      env,
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("create_entities");
      // The hop drops the answer: the client times out, as it would over a broken connection.
      await expect(
        client.callTool(keyed("create_entities", alice, "k-lost"), undefined, { timeout: 3000 }),
      ).rejects.toThrow();
      expect(readFileSync(marker, "utf8")).toBe("drop-answer");
      expect(entities(memory, "alice")).toBe(1);
      // The memory server would write alice again if the call reached it again (it skips existing names only).
      writeFileSync(memory, "");
      const replay = await client.callTool(keyed("create_entities", alice, "k-lost"));
      expect(replay._meta?.[REPLAYED_META]).toBe(true);
      expect(replay.isError).toBeFalsy();
      expect(entities(memory, "alice")).toBe(0);

      // The same key with other arguments is refused; a new key runs.
      const other = { entities: [{ name: "bob", entityType: "person", observations: [] }] };
      const reused = await client.callTool(keyed("create_entities", other, "k-lost"));
      expect(reused._meta?.[REFUSAL_META]).toBe("key_reused");
      expect(entities(memory, "bob")).toBe(0);
      const fresh = await client.callTool(keyed("create_entities", alice, "k-new"));
      expect(fresh._meta?.[REPLAYED_META]).toBeUndefined();
      expect(entities(memory, "alice")).toBe(1);
      // A call without a key passes through untouched.
      await client.callTool({ name: "create_entities", arguments: other });
      expect(entities(memory, "bob")).toBe(1);
    } finally {
      await client.close();
    }
  });

  it("an upstream killed after acting leaves the key outcome_unknown, never sent again after a restart", async () => {
    const { db, memory, marker } = setup();
    const env = { MEMORY_FILE_PATH: memory };
    const dying = [process.execPath, HOP, marker, "die-after-call", "--", process.execPath, MEMORY];
    const first = await connect(gatewayCommand(db, dying), env);
    try {
      const answer = await first.callTool(keyed("create_entities", alice, "k-dies"));
      expect(answer.isError).toBe(true);
      expect(answer._meta?.[REFUSAL_META]).toBe("outcome_unknown");
    } finally {
      await first.close();
    }
    expect(readFileSync(marker, "utf8")).toBe("die-after-call");
    expect(entities(memory, "alice")).toBe(1);
    const store = sqliteStore(db);
    try {
      const record = await store.get(mcpRecordKey("", "k-dies"));
      expect(record?.state).toBe("outcome_unknown");
      const listed = await store.list({ prefix: "mcp:" });
      expect(listed.map((r) => JSON.parse(r.data ?? "{}").key)).toEqual(["k-dies"]);
    } finally {
      await store.close();
    }

    writeFileSync(memory, "");
    const second = await connect(gatewayCommand(db, [process.execPath, MEMORY]), env);
    try {
      const retry = await second.callTool(keyed("create_entities", alice, "k-dies"));
      expect(retry._meta?.[REFUSAL_META]).toBe("outcome_unknown");
      expect(entities(memory, "alice")).toBe(0);
    } finally {
      await second.close();
    }
  });
});

function startClient(spec: object): { child: ChildProcess; output: Promise<string> } {
  const child = spawn(process.execPath, [CLIENT, JSON.stringify(spec)], {
    cwd: root,
    stdio: ["ignore", "pipe", "ignore"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  return { child, output: new Promise((resolve) => child.on("close", () => resolve(out))) };
}

describe("idemkey gateway mcp, in front of @modelcontextprotocol/server-filesystem", () => {
  it("a client killed mid-call and restarted gets the recorded answer: one edit per key in the file", async () => {
    const { run, db, marker } = setup();
    const allowed = join(run, "files");
    mkdirSync(allowed);
    const file = join(allowed, "log.txt");
    writeFileSync(file, "END");
    const upstream = [process.execPath, FILESYSTEM, allowed];
    const [command, ...args] = gatewayCommand(db, upstream, { marker, mode: "drop-answer" });
    const spec = {
      command,
      args,
      env: process.env,
      tool: "edit_file",
      // Not idempotent: every run puts one more "+" in front of END.
      arguments: { path: file, edits: [{ oldText: "END", newText: "+END" }] },
      key: "k-killed",
    };
    const first = startClient(spec);
    await until(() => existsSync(marker));
    first.child.kill("SIGKILL");
    await first.output;
    expect(readFileSync(file, "utf8")).toBe("+END");

    const second = startClient(spec);
    const result = JSON.parse(await second.output) as { _meta?: Record<string, unknown>; isError?: boolean };
    expect(result._meta?.[REPLAYED_META]).toBe(true);
    expect(result.isError).toBeFalsy();
    expect(readFileSync(file, "utf8")).toBe("+END");

    const third = startClient({ ...spec, key: "k-other" });
    const ran = JSON.parse(await third.output) as { _meta?: Record<string, unknown> };
    expect(ran._meta?.[REPLAYED_META]).toBeUndefined();
    expect(readFileSync(file, "utf8")).toBe("++END");
  });
});
