/*
 * idemkey on the Cloudflare Agents SDK: a Worker with an `Agent` whose tool is keyed by the harness, with the agent's
 * own Durable Object SQLite as the ledger, and an `McpAgent` (a remote MCP server) whose tool is deduped by
 * `mcpDedupe` on a Durable Object store every MCP session shares. Both reach the same owner, `Desk`, a Durable Object
 * that opens one ticket per key and writes down every request and ticket in its own tables: the record of effects,
 * which nothing of idemkey writes.
 *
 * Routes: POST /agents/assistant/<name> (the Agent's onRequest), /mcp (the McpAgent over Streamable HTTP), GET
 * /effects (the tickets Desk opened), GET /requests (how many requests it got), GET /boot (which isolate answers),
 * POST /faults/hold-next (the owner holds back its next answer).
 * Run it: npm run example:cloudflare-agents.
 */

import { DurableObject } from "cloudflare:workers";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Agent, routeAgentRequest } from "agents";
import { McpAgent } from "agents/mcp";
import { z } from "zod";
// In an application: from "idemkey", "idemkey/cloudflare" and "idemkey/mcp".
import { durableObjectStore, objectStore, type StoreMethod, serveStore } from "../../src/cloudflare/index.js";
import { createHarness, defineTool } from "../../src/index.js";
import { idempotencyKeyOf, mcpDedupe } from "../../src/mcp/index.js";

export interface Env {
  Assistant: DurableObjectNamespace<Assistant>;
  TICKETS: DurableObjectNamespace<Tickets>;
  LEDGER: DurableObjectNamespace<Ledger>;
  DESK: DurableObjectNamespace<Desk>;
}

/**
 * Drawn once per isolate, at its first request (workerd allows no random values in global scope): a reply that
 * carries another boot than the call before came from a restarted runtime.
 */
let boot: string | undefined;
const bootId = () => {
  boot ??= crypto.randomUUID();
  return boot;
};

/**
 * The owner of the effect, as an owner that takes an idempotency key works: opens one ticket per key, and answers a
 * repeat with the ticket it opened. It writes down every request it gets and every ticket it opens, in its own
 * SQLite: the record of effects the tests read.
 */
export class Desk extends DurableObject<Env> {
  #holdNext = false;
  async open(key: string, title: string): Promise<{ ticket: number }> {
    const sql = this.#tables();
    sql.exec("INSERT INTO requests (key) VALUES (?)", key);
    const opened = sql.exec("SELECT n FROM tickets WHERE key = ?", key).toArray()[0];
    if (opened !== undefined) return { ticket: opened.n as number };
    const row = sql.exec("INSERT INTO tickets (key, title) VALUES (?, ?) RETURNING n", key, title).one();
    // The fault a test injects: the ticket is open (written, and committed as this awaits), and the answer is
    // held back until workerd is stopped, as if the runtime died in the middle of the call.
    if (this.#holdNext) {
      this.#holdNext = false;
      await new Promise((resolve) => setTimeout(resolve, 10 * 60_000));
    }
    return { ticket: row.n as number };
  }
  /** Arms the fault above for the next ticket this object opens. */
  holdNext(): void {
    this.#holdNext = true;
  }
  tickets(): { key: string; title: string }[] {
    return this.#tables().exec("SELECT key, title FROM tickets ORDER BY n").toArray() as {
      key: string;
      title: string;
    }[];
  }
  requests(): number {
    return this.#tables().exec("SELECT count(*) AS n FROM requests").one().n as number;
  }
  #tables(): SqlStorage {
    const { sql } = this.ctx.storage;
    sql.exec("CREATE TABLE IF NOT EXISTS tickets (n INTEGER PRIMARY KEY, key TEXT UNIQUE, title TEXT)");
    sql.exec("CREATE TABLE IF NOT EXISTS requests (n INTEGER PRIMARY KEY, key TEXT)");
    return sql;
  }
}

const desk = (env: Env) => env.DESK.get(env.DESK.idFromName("desk"));

// #region agent
/**
 * An agent whose tool calls take effect once: the harness keeps its ledger in the agent's own SQLite, which survives
 * hibernation, eviction and a restarted runtime, so a call repeated after any of them is answered from the ledger.
 */
export class Assistant extends Agent<Env> {
  // A lease of 2 s rather than 30 s, so that a call cut off by a stopped runtime is taken over soon in the test.
  harness = createHarness({ store: durableObjectStore(this.ctx.storage), leaseMs: 2_000 });
  openTicket = defineTool({
    name: "openTicket",
    effect: "keyed",
    // The key goes to the owner with the call, as an Idempotency-Key header would.
    run: (args: { title: string }, ctx) => desk(this.env).open(ctx.idempotencyKey, args.title),
  });

  override async onRequest(request: Request): Promise<Response> {
    // taskId names the turn the call belongs to (a chat message id): the same turn retried gives the same key.
    const { taskId, title } = (await request.json()) as { taskId: string; title: string };
    const { value, replayed } = await this.harness.callWithOutcome(taskId, this.openTicket, { title });
    return Response.json({ ...value, replayed, boot: bootId() });
  }
}
// #endregion agent

// #region mcp
/**
 * The MCP server's ledger: a Durable Object of its own, whose SQLite every session's McpAgent reaches over RPC.
 */
export class Ledger extends DurableObject<Env> {
  #serve = serveStore(durableObjectStore(this.ctx.storage));
  idemkeyStore(method: StoreMethod, args: unknown[]): Promise<unknown> {
    return this.#serve(method, args);
  }
}

/**
 * A remote MCP server on Workers. Its tool is deduped on the key a client sends in `_meta`. The SDK runs one
 * object per MCP session (named after the session id), and a client that reconnects gets a new session: so the
 * keys live in the Ledger object, which outlives sessions, not in this object's own storage. One ledger object
 * serves here, as the server has one caller; one per caller (`idFromName(clientId)`) spreads the load.
 */
export class Tickets extends McpAgent<Env> {
  server = new McpServer({ name: "tickets", version: "1.0.0" });
  async init(): Promise<void> {
    const ledger = this.env.LEDGER.get(this.env.LEDGER.idFromName("tickets"));
    const idempotent = mcpDedupe({ store: objectStore(ledger) });
    this.server.registerTool(
      "open_ticket",
      { description: "Open a ticket.", inputSchema: { title: z.string() } },
      idempotent("open_ticket", async ({ title }, extra) => {
        const key = idempotencyKeyOf(extra) ?? "";
        const { ticket } = await desk(this.env).open(key, title);
        return { content: [{ type: "text", text: `Opened ticket #${ticket}: ${title}` }] };
      }),
    );
  }
}

const mcp = Tickets.serve("/mcp", { binding: "TICKETS" });
// #endregion mcp

export default {
  async fetch(request, env, ctx): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/mcp")) return mcp.fetch(request, env, ctx);
    if (url.pathname === "/effects") return Response.json(await desk(env).tickets());
    if (url.pathname === "/requests") return Response.json(await desk(env).requests());
    if (url.pathname === "/faults/hold-next") return Response.json(await desk(env).holdNext());
    if (url.pathname === "/boot") return new Response(bootId());
    const answer = await routeAgentRequest(request, env);
    if (answer === null) return new Response("not found", { status: 404 });
    // The fault the example and its test inject: the agent answered, and the answer is lost on its way back (a
    // proxy reset). The caller cannot tell whether the ticket was opened.
    if (request.headers.get("x-lose-answer") === "1") {
      await answer.arrayBuffer();
      return new Response("connection reset", { status: 502 });
    }
    return answer;
  },
} satisfies ExportedHandler<Env>;
