/**
 * idemkey with MCP, offline: an agent calls an MCP server's `create_issue` tool; the answer to the first call is lost
 * on the way back, the harness retries with the same key in `_meta`, and the server's mcpDedupe replays the saved
 * result instead of opening a second issue. Then a restarted agent (its ledger gone) repeats the call: replayed again.
 *
 * Run: npm run example:mcp
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
// In an application: from "idemkey" and "idemkey/mcp".
import { createHarness, memoryStore } from "../../src/index.js";
import { idempotencyKeyOf, mcpDedupe, mcpTool, REPLAYED_META } from "../../src/mcp/index.js";

// The server side: an issue tracker behind an MCP tool, deduped on the key the client sends.
const issues: { title: string; key: string | undefined }[] = [];
const server = new McpServer({ name: "tracker", version: "1.0.0" });
const idempotent = mcpDedupe({ store: memoryStore() });
server.registerTool(
  "create_issue",
  { description: "Open an issue.", inputSchema: { repo: z.string(), title: z.string() } },
  idempotent("create_issue", async (args, extra) => {
    issues.push({ title: args.title, key: idempotencyKeyOf(extra) });
    return { content: [{ type: "text" as const, text: `Opened #${issues.length}: ${args.title}` }] };
  }),
);

// The wire: in memory, losing the first tool result on its way back to the client.
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
let lost = 0;
const reply = serverSide.send.bind(serverSide);
serverSide.send = async (message, options) => {
  if ("result" in message && "content" in message.result && lost++ === 0) {
    console.log("  (the server's answer to the first call is lost on the way back)");
    return;
  }
  return reply(message, options);
};
await server.connect(serverSide);
const client = new Client({ name: "agent", version: "1.0.0" });
await client.connect(clientSide);

// The agent side: the MCP tool as an idemkey tool. The model never sees the key; the harness derives it.
const createIssue = mcpTool(client, { name: "create_issue", effect: "keyed", timeoutMs: 500 });
const taskId = "conversation-7781:message-12"; // the user message this run answers
const args = { repo: "acme/api", title: "Login fails on Safari" };

console.log("Agent calls create_issue:");
const harness = createHarness({
  retry: { minDelayMs: 50 },
  onEvent: (e) => console.log(`  harness: ${e.type} (attempt ${e.attempt})`),
});
const result = await harness.call(taskId, createIssue, args);
console.log(`  -> ${textOf(result)}  replayed by the server: ${result._meta?.[REPLAYED_META] === true}`);

console.log("A restarted agent, with a fresh ledger, repeats the call:");
const again = await createHarness().call(taskId, createIssue, args);
console.log(`  -> ${textOf(again)}  replayed by the server: ${again._meta?.[REPLAYED_META] === true}`);

console.log(`Issues opened: ${issues.length} (key ${issues[0]?.key?.slice(0, 16)}...)`);
await client.close();
if (issues.length !== 1) process.exitCode = 1;

function textOf(r: { content: unknown[] }): string {
  return r.content.map((p) => (p as { text?: string }).text ?? "").join(" ");
}
