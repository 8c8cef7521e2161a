/*
 * The Cloudflare Agents SDK example (examples/cloudflare-agents) in real workerd, started by Miniflare from Node:
 * the Agent's tool call survives a restarted runtime on the same persisted storage, and the McpAgent replays a keyed
 * tools/call sent twice by the MCP SDK's own client over Streamable HTTP. Effects are counted in the rows the owner
 * (the Desk object) writes, read back through the Worker, never through idemkey. workerd's log is kept and printed
 * only when a test fails.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { bundleWorker, type Runtime, startWorker } from "../../examples/cloudflare-agents/runtime.js";
import { IDEMPOTENCY_KEY_META, REPLAYED_META } from "../../src/mcp/index.js";

const dirs: string[] = [];
const running: Runtime[] = [];
let log: string[] = [];

beforeAll(async () => {
  // Bundling the agents package takes a few seconds on a loaded machine: once, before the timed tests.
  await bundleWorker();
}, 120_000);

afterEach(async () => {
  for (const runtime of running.splice(0)) await runtime.dispose();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A runtime on `persist`, its log kept for a failure's report. */
async function start(persist: string): Promise<Runtime> {
  const runtime = await startWorker({ persist, log: (line) => log.push(line) });
  running.push(runtime);
  return runtime;
}

function persistDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-cf-agents-"));
  dirs.push(dir);
  return dir;
}

/** Polls `ready` until it says yes: waiting on what the runtime wrote, not on time. */
async function until(ready: () => Promise<boolean>): Promise<void> {
  while (!(await ready())) await new Promise((resolve) => setTimeout(resolve, 20));
}

function keepLog(): void {
  log = [];
  onTestFailed(() => {
    console.error(`workerd and Miniflare said:\n${log.join("\n")}`);
  });
}

interface Ticket {
  key: string;
  title: string;
}
const effects = async (runtime: Runtime) => (await (await runtime.fetch("/effects")).json()) as Ticket[];
/** Every request the owner got, a repeat with a key it knows included. */
const requests = async (runtime: Runtime) => (await (await runtime.fetch("/requests")).json()) as number;

const askAgent = (runtime: Runtime, body: object, headers: Record<string, string> = {}) =>
  runtime.fetch("/agents/assistant/ana", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

describe("Cloudflare Agents SDK in workerd", () => {
  it("an Agent's call whose answer was lost takes effect once across a restarted runtime on the same storage", async () => {
    keepLog();
    const persist = persistDir();
    const call = { taskId: "conversation-7781:message-12", title: "Login fails on Safari" };

    const first = await start(persist);
    const firstBoot = await (await first.fetch("/boot")).text();
    // The agent opened the ticket and answered; the answer is lost on its way back.
    const lost = await askAgent(first, call, { "x-lose-answer": "1" });
    expect(lost.status).toBe(502);
    expect(await effects(first)).toHaveLength(1);
    // Evicted: the runtime stops, every isolate and object in memory with it; only the persisted SQLite stays.
    await first.dispose();
    running.splice(running.indexOf(first), 1);

    const second = await start(persist);
    const again = await askAgent(second, call);
    expect(again.status).toBe(200);
    const answer = (await again.json()) as { ticket: number; replayed: boolean; boot: string };
    expect(answer).toMatchObject({ ticket: 1, replayed: true });

    // Another isolate answered, in a new workerd process: the replay came from the ledger on disk, not from memory.
    expect(answer.boot).not.toBe(firstBoot);
    // And a fresh call there still runs.
    const fresh = (await (await askAgent(second, { ...call, title: "Logout too" })).json()) as {
      ticket: number;
      replayed: boolean;
      boot: string;
    };
    expect(fresh).toMatchObject({ ticket: 2, replayed: false, boot: answer.boot });

    const tickets = await effects(second);
    expect(tickets.map((t) => t.title)).toEqual(["Login fails on Safari", "Logout too"]);
    // The replay never reached the owner: two requests, one per ticket.
    expect(await requests(second)).toBe(2);
    // The owner was sent the harness's key: lowercase hex SHA-256, one per call.
    expect(tickets[0]!.key).toMatch(/^[0-9a-f]{64}$/);
    expect(tickets[1]!.key).not.toBe(tickets[0]!.key);
  }, 120_000);

  it("an Agent's call cut off by a stopped runtime after its effect is taken over on the same storage and sent again with its key", async () => {
    keepLog();
    const persist = persistDir();
    const call = { taskId: "conversation-7781:message-13", title: "Export is empty" };

    const first = await start(persist);
    // The owner opens the ticket and holds its answer back; workerd is stopped while the call runs.
    expect((await first.fetch("/faults/hold-next", { method: "POST" })).status).toBe(200);
    const cut = askAgent(first, call).then(
      () => "answered",
      () => "cut off",
    );
    await until(async () => (await effects(first)).length === 1);
    await first.dispose();
    running.splice(running.indexOf(first), 1);
    expect(await cut).toBe("cut off");

    // The record is pending: the restarted agent waits out its lease, takes it over and runs the tool again with
    // the same key, which the owner answers with the ticket it opened.
    const second = await start(persist);
    const again = await askAgent(second, call);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ ticket: 1, replayed: false });
    const tickets = await effects(second);
    expect(tickets).toHaveLength(1);
    expect(await requests(second)).toBe(2);
  }, 120_000);

  it("an McpAgent replays a keyed tools/call sent again by the MCP SDK's client over Streamable HTTP, in the same session and in a new one", async () => {
    keepLog();
    const runtime = await start(persistDir());
    const key = "d2c1f3e0-agent-turn-12";
    const call = {
      name: "open_ticket",
      arguments: { title: "Refund order 1182" },
      _meta: { [IDEMPOTENCY_KEY_META]: key },
    };
    const connect = async () => {
      const client = new Client({ name: "agent", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", runtime.url)));
      return client;
    };

    const client = await connect();
    const first = await client.callTool(call);
    const second = await client.callTool(call);
    const session = (client.transport as StreamableHTTPClientTransport).sessionId;
    await client.close();
    // The client reconnects, as one does after losing its connection: a new session, so a new McpAgent object.
    const reconnected = await connect();
    const third = await reconnected.callTool(call);
    expect((reconnected.transport as StreamableHTTPClientTransport).sessionId).not.toBe(session);
    await reconnected.close();

    expect(first.isError).toBeFalsy();
    expect(first._meta?.[REPLAYED_META]).toBeUndefined();
    for (const again of [second, third]) {
      expect(again.content).toEqual(first.content);
      expect(again._meta?.[REPLAYED_META]).toBe(true);
    }
    expect(await effects(runtime)).toEqual([{ key, title: "Refund order 1182" }]);
    expect(await requests(runtime)).toBe(1);
  }, 120_000);
});
