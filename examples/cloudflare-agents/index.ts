/**
 * idemkey on the Cloudflare Agents SDK, locally in workerd (Miniflare), offline: an Agent opens a ticket and its
 * answer is lost on the way back; the runtime is stopped and started again on the same persisted storage, and the
 * same call is answered from the agent's Durable Object ledger instead of opening a second ticket. Then an MCP
 * client calls the McpAgent's tool twice with one key in `_meta`: the second answer is the first, replayed.
 *
 * Run: npm run example:cloudflare-agents
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// In an application: from "idemkey/mcp".
import { IDEMPOTENCY_KEY_META, REPLAYED_META } from "../../src/mcp/index.js";
import { type Runtime, startWorker } from "./runtime.js";

const persist = mkdtempSync(join(tmpdir(), "idemkey-cloudflare-agents-"));
const log: string[] = [];
const call = { taskId: "conversation-7781:message-12", title: "Login fails on Safari" };
const ask = (runtime: Runtime, headers: Record<string, string> = {}) =>
  runtime.fetch("/agents/assistant/ana", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(call),
  });
const tickets = async (runtime: Runtime) => (await (await runtime.fetch("/effects")).json()) as unknown[];

try {
  console.log("The agent opens a ticket; its answer is lost on the way back:");
  const first = await startWorker({ persist, log: (line) => log.push(line) });
  console.log(
    `  -> HTTP ${(await ask(first, { "x-lose-answer": "1" })).status}; tickets opened: ${(await tickets(first)).length}`,
  );
  await first.dispose();
  console.log("workerd stopped (every object evicted); started again on the same storage. The same call:");
  const second = await startWorker({ persist, log: (line) => log.push(line) });
  console.log(`  -> ${await (await ask(second)).text()}`);

  console.log("An MCP client calls open_ticket twice with one key in _meta:");
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", second.url)));
  const mcpCall = {
    name: "open_ticket",
    arguments: { title: "Refund order 1182" },
    _meta: { [IDEMPOTENCY_KEY_META]: "turn-12" },
  };
  for (let i = 0; i < 2; i++) {
    const result = await client.callTool(mcpCall);
    const text = (result.content as { text?: string }[]).map((part) => part.text).join(" ");
    console.log(`  -> ${text}  replayed: ${result._meta?.[REPLAYED_META] === true}`);
  }
  await client.close();
  const opened = await tickets(second);
  console.log(`Tickets opened: ${opened.length} (one by the agent, one over MCP)`);
  await second.dispose();
  if (opened.length !== 2) process.exitCode = 1;
} catch (error) {
  console.error(log.join("\n"));
  throw error;
} finally {
  rmSync(persist, { recursive: true, force: true });
}
