import { appendFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { idempotency } from "../../src/hono/index.js";
import type { KeySummary } from "../../src/inspector/owner-keys.js";
import { IDEMPOTENCY_KEY_META, mcpDedupe } from "../../src/mcp/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { serve } from "../inspector/support.js";
import { runCli } from "../support/cli.js";
import { lines, startHttpGateway, tempRuns } from "./support.js";

// The inspector lists what the gateway wrote as it lists what the owner's own middleware (or mcpDedupe) wrote: the
// same rows (scope, key, state, tool or method and target, result) from `idemkey inspect --list` and `/api/keys`,
// for a completed key and for an upstream that died mid-call (outcome unknown). The gateways run from the CLI in
// front of real upstreams (Python's http.server, @modelcontextprotocol/server-memory); the effects are counted in
// the upstreams' own files.
const require = createRequire(import.meta.url);
const MEMORY = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");
const HOP = fileURLToPath(new URL("./fixtures/hop.mjs", import.meta.url));
const root = fileURLToPath(new URL("../../", import.meta.url));
const CLI = join(root, "src/cli/index.ts");

const runs = tempRuns("idemkey-gateway-inspect-");

/** `idemkey inspect --store sqlite:<db> --list`, parsed: one record a line. */
async function listed(db: string, redact = "none"): Promise<KeySummary[]> {
  const { code, stdout, stderr } = await runCli([
    "inspect",
    "--store",
    `sqlite:${db}`,
    "--list",
    "--redact",
    redact,
  ]);
  expect(stderr).toBe("");
  expect(code).toBe(0);
  return stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as KeySummary);
}

/** What a row says about its call, without the times, the holder and the store key, which differ between runs. */
const shape = ({ kind, scope, key, state, tool, method, target, attempts, result }: KeySummary) => ({
  kind,
  scope,
  key,
  state,
  tool,
  method,
  target,
  attempts,
  result,
});

const post = (url: string, key: string, body: string) =>
  fetch(url, {
    method: "POST",
    headers: { "idempotency-key": key, "content-type": "application/json", "x-api-key": "alice" },
    body,
  });

describe("the inspector lists the HTTP gateway's keys like the middleware's", () => {
  it("a completed key and an upstream that died mid-request, from both, list alike", async () => {
    // The gateway in front of Python's http.server.
    const run = runs.next();
    const { url, effects, db: gatewayDb } = await startHttpGateway(run, ["--scope-header", "x-api-key"]);
    expect((await post(`${url}/slow`, "k-done", '{"n":1}')).status).toBe(201);
    expect((await post(`${url}/die`, "k-died", '{"n":2}')).status).toBe(502);
    expect(effects()).toEqual(['{"n":1}', '{"n":2}']);

    // The owner's own middleware (Hono), with a handler that acts like the Python server's.
    const middlewareDb = join(run, "middleware.db");
    const ownLog = join(run, "own-effects.log");
    const store = sqliteStore(middlewareDb);
    const app = new Hono();
    app.use("*", idempotency({ store, scope: (c) => c.req.header("x-api-key") ?? "" }));
    app.post("/slow", async (c) => {
      appendFileSync(ownLog, `${await c.req.text()}\n`);
      return c.json({ effects: lines(ownLog).length }, 201);
    });
    app.post("/die", async (c) => {
      appendFileSync(ownLog, `${await c.req.text()}\n`);
      throw new Error("the process died");
    });
    app.onError((_error, c) => c.text("failed", 500));
    const request = (path: string, key: string, body: string) =>
      app.request(path, {
        method: "POST",
        headers: { "idempotency-key": key, "content-type": "application/json", "x-api-key": "alice" },
        body,
      });
    expect((await request("/slow", "k-done", '{"n":1}')).status).toBe(201);
    expect((await request("/die", "k-died", '{"n":2}')).status).toBe(500);
    await store.close();
    expect(lines(ownLog)).toEqual(['{"n":1}', '{"n":2}']);

    const fromGateway = await listed(gatewayDb);
    const fromMiddleware = await listed(middlewareDb);
    const rows = (list: KeySummary[]) => list.map(shape).sort((a, b) => (a.key < b.key ? -1 : 1));
    expect(rows(fromGateway)).toEqual([
      {
        kind: "http",
        scope: "alice",
        key: "k-died",
        state: "outcome_unknown",
        tool: undefined,
        method: "POST",
        target: "/die",
        attempts: 0,
        result: undefined,
      },
      {
        kind: "http",
        scope: "alice",
        key: "k-done",
        state: "completed",
        tool: undefined,
        method: "POST",
        target: "/slow",
        attempts: 0,
        result: {
          status: 201,
          headers: expect.arrayContaining([["content-type", "application/json"]]),
          body: { effects: 1 },
        },
      },
    ]);
    // Alike: the same rows, whichever of the two wrote them, but for the headers the two servers send.
    const noHeaders = (list: KeySummary[]) =>
      rows(list).map((row) =>
        row.result && "headers" in row.result ? { ...row, result: { ...row.result, headers: [] } } : row,
      );
    expect(noHeaders(fromMiddleware)).toEqual(noHeaders(fromGateway));

    // The page's API lists the same rows; the scope (an API key here) is masked while fields are redacted.
    const gatewayStore = sqliteStore(gatewayDb);
    const inspector = await serve({ store: gatewayStore });
    try {
      const api = (await (await fetch(`${inspector.base}/api/keys`)).json()) as { keys: KeySummary[] };
      expect(api.keys.map((row) => [row.key, row.state, row.scope])).toEqual([
        ["k-died", "outcome_unknown", "[redacted]"],
        ["k-done", "completed", "[redacted]"],
      ]);
      expect(new Set(api.keys.map((row) => row.scopeId)).size).toBe(1);
      // A masked scope is filtered by the (keyed) scopeId shown, never by the scope itself.
      const unknown = (await (
        await fetch(`${inspector.base}/api/keys?state=outcome_unknown&scopeId=${api.keys[0]!.scopeId}`)
      ).json()) as { keys: KeySummary[] };
      expect(unknown.keys.map((row) => row.key)).toEqual(["k-died"]);
      const bad = await fetch(`${inspector.base}/api/keys?kind=ftp`);
      expect(bad.status).toBe(400);
      expect(bad.headers.get("content-type")).toContain("application/problem+json");
    } finally {
      await inspector.close();
      await gatewayStore.close();
    }
  });
});

const alice = { entities: [{ name: "alice", entityType: "person", observations: ["met"] }] };
const keyed = (args: Record<string, unknown>, key: string) => ({
  name: "create_entities",
  arguments: args,
  _meta: { [IDEMPOTENCY_KEY_META]: key },
});

describe("the inspector lists the MCP gateway's keys like mcpDedupe's", () => {
  it("a completed key and an upstream that died mid-call, from both, list alike", async () => {
    // The gateway in front of the published memory server: a call that completes, then one whose server dies
    // after acting (the hop kills it before it answers).
    const run = runs.next();
    const gatewayDb = join(run, "gateway.db");
    const memory = join(run, "memory.jsonl");
    const gatewayLine = (upstream: string[]) => [
      "--import",
      "tsx",
      CLI,
      "gateway",
      "mcp",
      "--store",
      `sqlite:${gatewayDb}`,
      "--",
      ...upstream,
    ];
    const connect = async (args: string[]) => {
      const client = new Client({ name: "agent", version: "1.0.0" });
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args,
          cwd: root,
          env: { ...(process.env as Record<string, string>), MEMORY_FILE_PATH: memory },
          stderr: "ignore",
        }),
      );
      return client;
    };
    const first = await connect(gatewayLine([process.execPath, MEMORY]));
    try {
      expect((await first.callTool(keyed(alice, "k-done"))).isError).toBeFalsy();
    } finally {
      await first.close();
    }
    const bob = { entities: [{ name: "bob", entityType: "person", observations: [] }] };
    const dying = await connect(
      gatewayLine([
        process.execPath,
        HOP,
        join(run, "marker"),
        "die-after-call",
        "--",
        process.execPath,
        MEMORY,
      ]),
    );
    try {
      expect((await dying.callTool(keyed(bob, "k-died"))).isError).toBe(true);
    } finally {
      await dying.close();
    }
    expect(lines(memory).map((line) => JSON.parse(line).name)).toEqual(["alice", "bob"]);

    // mcpDedupe in the owner's own server, with a tool that acts and one whose process "dies" (throws) after acting.
    const ownDb = join(run, "own.db");
    const ownLog = join(run, "own.jsonl");
    const store = sqliteStore(ownDb);
    const dedupe = mcpDedupe({ store });
    const server = new McpServer({ name: "own", version: "1.0.0" });
    let dies = false;
    server.registerTool(
      "create_entities",
      { inputSchema: { entities: z.array(z.object({ name: z.string() }).passthrough()) } },
      dedupe("create_entities", async ({ entities }) => {
        for (const entity of entities) appendFileSync(ownLog, `${JSON.stringify(entity)}\n`);
        if (dies) throw new Error("the server died");
        return { content: [{ type: "text" as const, text: "created" }] };
      }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const own = new Client({ name: "agent", version: "1.0.0" });
    await own.connect(clientSide);
    await own.callTool(keyed(alice, "k-done"));
    dies = true;
    await own.callTool(keyed(bob, "k-died"));
    await own.close();
    await store.close();
    expect(lines(ownLog)).toHaveLength(2);

    const rows = (list: KeySummary[]) => list.map(shape).sort((a, b) => (a.key < b.key ? -1 : 1));
    const fromGateway = rows(await listed(gatewayDb));
    expect(fromGateway).toEqual([
      {
        kind: "mcp",
        scope: "",
        key: "k-died",
        state: "outcome_unknown",
        tool: "create_entities",
        method: undefined,
        target: undefined,
        attempts: 0,
        result: undefined,
      },
      {
        kind: "mcp",
        scope: "",
        key: "k-done",
        state: "completed",
        tool: "create_entities",
        method: undefined,
        target: undefined,
        attempts: 0,
        result: { toolResult: expect.objectContaining({ content: expect.any(Array) }) },
      },
    ]);
    // Alike, but for what each server's tool answered.
    const noResult = (list: ReturnType<typeof rows>) =>
      list.map((row) => ({
        ...row,
        result: row.result === undefined ? undefined : "toolResult" in row.result,
      }));
    expect(noResult(rows(await listed(ownDb)))).toEqual(noResult(fromGateway));
  });
});
