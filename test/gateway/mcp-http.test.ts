import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { mcpHttpGateway } from "../../src/gateway/index.js";
import { IDEMPOTENCY_KEY_META, REFUSAL_META, REPLAYED_META } from "../../src/mcp/meta.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { runCli } from "../support/cli.js";
import { lines, started, startGateway, tempRuns, until, mcpUpstream as upstream } from "./support.js";

// `idemkey gateway mcp` over Streamable HTTP, from the CLI: in front of an MCP server reached over Streamable HTTP
// (test/gateway/fixtures/http-upstream.mjs, the SDK's own server transport, in a child that counts its effects in
// its own file) and in front of the published server-memory over stdio, answering the SDK's real Client over
// Streamable HTTP; with an answer the client never got, a client killed mid-call and an upstream that dies.
const require = createRequire(import.meta.url);
const MEMORY = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");
const CLIENT = fileURLToPath(new URL("./fixtures/client.mjs", import.meta.url));
const root = fileURLToPath(new URL("../../", import.meta.url));

const runs = tempRuns("idemkey-gateway-http-mcp-");

/** `idemkey gateway mcp --listen` in front of `upstreamArgs`; resolves with the URL it prints. */
const gateway = (db: string, upstreamArgs: string[], extra: string[] = []) =>
  startGateway("mcp", db, [...extra, ...upstreamArgs]);

async function connect(url: string, headers: Record<string, string> = {}) {
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

const keyed = (name: string, args: Record<string, unknown>, key: string) => ({
  name,
  arguments: args,
  _meta: { [IDEMPOTENCY_KEY_META]: key },
});

/** Calls until the answer is no longer "in flight", as a client honouring the retry hint would. */
async function settled(call: () => Promise<CallToolResult>): Promise<CallToolResult> {
  for (;;) {
    const result = await call();
    if (result._meta?.[REFUSAL_META] !== "key_in_flight") return result;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("idemkey gateway mcp over Streamable HTTP, in front of an MCP server over Streamable HTTP", () => {
  it("an answer the client never got is replayed to its retry in a new session: one effect per key", async () => {
    const run = runs.next();
    const up = await upstream(run, "sse");
    const gw = await gateway(join(run, "gateway.db"), ["--upstream-url", up.url]);
    const release = join(run, "release");
    const first = await connect(gw.url);
    const { tools } = await first.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["append", "die"]);
    // The client gives up on the call while it runs (its answer is lost); the gateway lets it finish.
    const abort = new AbortController();
    const lost = first.callTool(keyed("append", { text: "one", release }, "k-lost"), undefined, {
      signal: abort.signal,
    });
    await until(() => up.effects().length === 1);
    abort.abort();
    await expect(lost).rejects.toThrow();
    await first.close();
    writeFileSync(release, "");

    const second = await connect(gw.url);
    try {
      const replay = await settled(
        () => second.callTool(keyed("append", { text: "one", release }, "k-lost")) as Promise<CallToolResult>,
      );
      expect(replay._meta?.[REPLAYED_META]).toBe(true);
      expect(replay.content).toEqual([{ type: "text", text: "lines: 1" }]);
      expect(up.effects()).toEqual(["one"]);
      const reused = await second.callTool(keyed("append", { text: "two" }, "k-lost"));
      expect(reused._meta?.[REFUSAL_META]).toBe("key_reused");
      const fresh = await second.callTool(keyed("append", { text: "two" }, "k-new"));
      expect(fresh._meta?.[REPLAYED_META]).toBeUndefined();
      // A call without a key passes through untouched.
      await second.callTool({ name: "append", arguments: { text: "three" } });
      expect(up.effects()).toEqual(["one", "two", "three"]);
    } finally {
      await second.close();
    }
  });

  it("a client killed mid-call and started again gets the recorded answer: one effect", async () => {
    const run = runs.next();
    const up = await upstream(run, "sse");
    const gw = await gateway(join(run, "gateway.db"), ["--upstream-url", up.url]);
    const release = join(run, "release");
    const spec = { url: gw.url, tool: "append", arguments: { text: "once", release }, key: "k-killed" };
    const client = started(
      spawn(process.execPath, [CLIENT, JSON.stringify(spec)], { cwd: root, stdio: "ignore" }),
    );
    await until(() => up.effects().length === 1);
    client.kill("SIGKILL");
    writeFileSync(release, "");
    const again = started(
      spawn(process.execPath, [CLIENT, JSON.stringify(spec)], {
        cwd: root,
        stdio: ["ignore", "pipe", "ignore"],
      }),
    );
    let out = "";
    again.stdout!.on("data", (d) => (out += d));
    await new Promise((resolve) => again.on("close", resolve));
    const result = JSON.parse(out) as CallToolResult;
    // The killed client's call may still be running when the second one comes: it waits for its answer.
    expect(result._meta?.[REPLAYED_META]).toBe(true);
    expect(up.effects()).toEqual(["once"]);
  });

  it("an upstream that dies mid-call leaves the outcome unknown, never sent again", async () => {
    const run = runs.next();
    const up = await upstream(run, "json");
    const gw = await gateway(join(run, "gateway.db"), ["--upstream-url", up.url]);
    const client = await connect(gw.url);
    try {
      const died = await client.callTool(keyed("die", { text: "last" }, "k-dies"));
      expect(died.isError).toBe(true);
      expect(died._meta?.[REFUSAL_META]).toBe("outcome_unknown");
      expect(up.effects()).toEqual(["last"]);
      const retry = await client.callTool(keyed("die", { text: "last" }, "k-dies"));
      expect(retry._meta?.[REFUSAL_META]).toBe("outcome_unknown");
      expect(up.effects()).toEqual(["last"]);
    } finally {
      await client.close();
    }
  });
  it("an upstream that refuses the connection took nothing: the key is released, not left unknown", async () => {
    const run = runs.next();
    const up = await upstream(run, "json");
    const db = join(run, "gateway.db");
    const gw = await gateway(db, ["--upstream-url", up.url]);
    const client = await connect(gw.url);
    try {
      up.child.kill("SIGKILL");
      await new Promise((resolve) => up.child.once("exit", resolve));
      await expect(client.callTool(keyed("append", { text: "never" }, "k-refused"))).rejects.toThrow(
        /nothing was sent/,
      );
      expect(up.effects()).toEqual([]);
      // Released: the store holds no record of the key.
      const listed = await runCli(["inspect", "--store", `sqlite:${db}`, "--list"]);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toBe("");
    } finally {
      await client.close();
    }
  });
});

describe("idemkey gateway mcp over Streamable HTTP, in front of server-memory over stdio", () => {
  it("passes the session through, and a reconnected client's retry is replayed from the record", async () => {
    const run = runs.next();
    const memory = join(run, "memory.jsonl");
    const alice = { entities: [{ name: "alice", entityType: "person", observations: ["met"] }] };
    const count = () => lines(memory).filter((line) => JSON.parse(line).name === "alice").length;
    process.env.MEMORY_FILE_PATH = memory;
    const gw = await gateway(
      join(run, "gateway.db"),
      ["--", process.execPath, MEMORY],
      ["--scope-header", "x-api-key"],
    );
    delete process.env.MEMORY_FILE_PATH;
    const first = await connect(gw.url, { "x-api-key": "alice" });
    try {
      const { tools } = await first.listTools();
      expect(tools.map((t) => t.name)).toContain("create_entities");
      const ran = await first.callTool(keyed("create_entities", alice, "k-1"));
      expect(ran.isError).toBeFalsy();
      expect(count()).toBe(1);
    } finally {
      await first.close();
    }
    // The memory server would write alice again if the call reached it again.
    writeFileSync(memory, "");
    const second = await connect(gw.url, { "x-api-key": "alice" });
    try {
      const replay = await second.callTool(keyed("create_entities", alice, "k-1"));
      expect(replay._meta?.[REPLAYED_META]).toBe(true);
      expect(count()).toBe(0);
    } finally {
      await second.close();
    }
    // Another caller's same key is its own.
    const bob = await connect(gw.url, { "x-api-key": "bob" });
    try {
      const own = await bob.callTool(keyed("create_entities", alice, "k-1"));
      expect(own._meta?.[REPLAYED_META]).toBeUndefined();
      expect(count()).toBe(1);
    } finally {
      await bob.close();
    }
  });
});

describe("mcpHttpGateway: a session left without a word", () => {
  it("is closed once idle, with its upstream connection; the client's retry in a new session is replayed", async () => {
    const run = runs.next();
    const up = await upstream(run, "json");
    const store = sqliteStore(join(run, "gateway.db"));
    let upstreamClosed = 0;
    const served = await mcpHttpGateway({
      store,
      // Long enough that the calls below come well within it, however loaded the machine.
      sessionIdleMs: 2000,
      upstream: () => {
        const transport = new StreamableHTTPClientTransport(new URL(up.url));
        const close = transport.close.bind(transport);
        transport.close = () => {
          upstreamClosed++;
          return close();
        };
        return transport;
      },
    });
    try {
      const transport = new StreamableHTTPClientTransport(new URL(served.url));
      const client = new Client({ name: "agent", version: "1.0.0" });
      await client.connect(transport);
      expect((await client.callTool(keyed("append", { text: "once" }, "k-idle"))).isError).toBeFalsy();
      const session = transport.sessionId!;
      // The client says nothing more (as a killed one would): the gateway closes the session and its upstream.
      await until(() => upstreamClosed === 1);
      const stale = await fetch(served.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": session,
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(stale.status).toBe(404);
      const again = await connect(served.url);
      try {
        const replay = await again.callTool(keyed("append", { text: "once" }, "k-idle"));
        expect(replay._meta?.[REPLAYED_META]).toBe(true);
      } finally {
        await again.close();
      }
      expect(up.effects()).toEqual(["once"]);
    } finally {
      await served.close();
      await store.close();
    }
  });
});

describe("idemkey gateway mcp: bad upstream and listen flags print one line and exit 2", () => {
  const cases: [string, string[], RegExp][] = [
    ["both upstreams", ["--upstream-url", "http://127.0.0.1:1/mcp", "--", "node"], /not both/],
    ["no upstream", [], /missing the upstream/],
    ["an upstream URL that is not http", ["--upstream-url", "ftp://x"], /--upstream-url/],
    ["a bad --listen", ["--listen", "x:y", "--", "node"], /--listen/],
    ["--scope-header without --listen", ["--scope-header", "x-api-key", "--", "node"], /needs --listen/],
    ["--session-idle-ms without --listen", ["--session-idle-ms", "10", "--", "node"], /needs --listen/],
  ];
  it.each(cases)("%s", async (_, args, message) => {
    const { code, stdout, stderr } = await runCli(["gateway", "mcp", "--store", "sqlite:x.db", ...args]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^idemkey: [^\n]+\n$/);
    expect(stderr).toMatch(message);
  });
});
