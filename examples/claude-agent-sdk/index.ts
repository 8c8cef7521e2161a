/**
 * idemkey with the Claude Agent SDK, offline (no model, no Claude Code process): a custom tool made with `tool()` and
 * served by `createSdkMcpServer`, called through an MCP client in memory as Claude Code calls it. The session is
 * resumed in a new process and the refund is called again, as after a crash between the tool's effect and the
 * transcript's write. The session id keys the call, on a shared SQLite ledger, and one refund is made.
 *
 * Run: npm run example:claude-agent-sdk
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSdkMcpServer, tool } from "@anthropic-ai/claude-agent-sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { z } from "zod";
// In an application: from "idemkey", "idemkey/claude-agent-sdk" and "idemkey/sqlite".
import { idemkeyContext, idempotentSdkTool } from "../../src/claude-agent-sdk/index.js";
import { createHarness } from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";

const refunds: { paymentId: string; key: string | undefined }[] = [];
// The id the app gave query() with options.sessionId, and passes again as options.resume.
const sessionId = "5b8e2c1a-4f0e-4d7e-9a51-2f6f0c7d9a11";
const dir = mkdtempSync(join(tmpdir(), "idemkey-example-claude-"));
const ledger = join(dir, "ledger.db");

for (const name of [
  "Process 1: Claude calls the refund.",
  "Process 2: the resumed session calls it again.",
]) {
  console.log(name);
  const store = sqliteStore(ledger);
  const harness = createHarness({ store, onEvent: (e) => console.log(`  harness: ${e.type} ${e.tool}`) });
  const refund = tool(
    "refund",
    "Refund a payment.",
    { paymentId: z.string(), cents: z.number() },
    async (args, extra) => {
      // A real payments API would take the key as its idempotency key.
      refunds.push({ paymentId: args.paymentId, key: idemkeyContext(extra)?.idempotencyKey });
      return { content: [{ type: "text", text: `refund-${refunds.length}` }] };
    },
  );
  const server = createSdkMcpServer({
    name: "billing",
    version: "1.0.0",
    tools: [idempotentSdkTool(harness, refund, { effect: "keyed", taskId: sessionId })],
  });
  // What Claude Code does with an in-process server: an MCP client on a linked transport.
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.instance.connect(serverSide);
  const client = new Client({ name: "claude-code", version: "1.0.0" });
  await client.connect(clientSide);
  const result = await client.callTool({ name: "refund", arguments: { paymentId: "pay_881", cents: 4_999 } });
  console.log(`  ${JSON.stringify(result.content)}`);
  await client.close();
  await store.close();
}
rmSync(dir, { recursive: true, force: true });

console.log(`Refunds made: ${refunds.length}`);
if (refunds.length !== 1) process.exitCode = 1;
