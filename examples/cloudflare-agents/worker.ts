/*
 * idemkey on the Cloudflare Agents SDK: a Worker with an `Agent` whose tool is keyed by the harness, with the agent's
 * own Durable Object SQLite as the ledger, and an `McpAgent` (a remote MCP server) whose tool is deduped by
 * `mcpDedupe` on its own Durable Object SQLite. Both reach the same owner, `Desk`, a Durable Object that opens
 * tickets and writes each one it opens in its own table: the record of effects, which neither idemkey nor the tests'
 * code under test writes.
 *
 * Routes: POST /agents/assistant/<name> (the Agent's onRequest), /mcp (the McpAgent over Streamable HTTP),
 * GET /effects (what Desk opened), GET /boot (which isolate answers). Run it: npm run example:cloudflare-agents.
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
 * The owner of the effect: opens a ticket for every request it gets, as an owner that does not dedupe would, and
 * writes it with the key it was sent. A second effect for one key would show as a second row.
 */
export class Desk extends DurableObject<Env> {
  open(key: string, title: string): { ticket: number } {
    const { sql } = this.ctx.storage;
    sql.exec(
      "CREATE TABLE IF NOT EXISTS tickets (n INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT, title TEXT)",
    );
    const row = sql.exec("INSERT INTO tickets (key, title) VALUES (?, ?) RETURNING n", key, title).one();
    return { ticket: row.n as number };
  }
  tickets(): { key: string; title: string }[] {
    const { sql } = this.ctx.storage;
    sql.exec(
      "CREATE TABLE IF NOT EXISTS tickets (n INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT, title TEXT)",
    );
    return sql.exec("SELECT key, title FROM tickets ORDER BY n").toArray() as {
      key: string;
      title: string;
    }[];
  }
}

const desk = (env: Env) => env.DESK.get(env.DESK.idFromName("desk"));

// #region agent
/**
 * An agent whose tool calls take effect once: the harness keeps its ledger in the agent's own SQLite, which survives
 * hibernation, eviction and a restarted runtime, so a call repeated after any of them is answered from the ledger.
 */
export class Assistant extends Agent<Env> {
  harness = createHarness({ store: durableObjectStore(this.ctx.storage) });
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
