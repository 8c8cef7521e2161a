/**
 * idemkey with the Vercel AI SDK, offline (the SDK's own mock model): the model asks for the same email twice in one
 * step, and then the process "crashes" before the run finishes. A new process re-runs the whole step, the model
 * re-sampling the call under a new tool call id, on the same SQLite ledger: one email is sent in all.
 *
 * Run: npm run example:ai
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
// In an application: from "idemkey", "idemkey/ai" and "idemkey/sqlite".
import { idemkeyContext, idempotentTools } from "../../src/ai/index.js";
import { createHarness } from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";

const outbox: { to: string; key: string | undefined }[] = [];
const tools = {
  sendEmail: tool({
    description: "Email a customer.",
    inputSchema: z.object({ to: z.string(), body: z.string() }),
    // A real mail API would take the key as its Idempotency-Key header.
    execute: async ({ to }, options) => {
      outbox.push({ to, key: idemkeyContext(options)?.idempotencyKey });
      return { messageId: `msg-${outbox.length}` };
    },
  }),
};

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};
const email = (toolCallId: string) => ({
  type: "tool-call" as const,
  toolCallId,
  toolName: "sendEmail",
  input: JSON.stringify({ to: "dana@example.com", body: "Your refund is on its way." }),
});
const step = (...content: ReturnType<typeof email>[]) => ({
  content,
  finishReason: { unified: "tool-calls" as const, raw: undefined },
  usage,
  warnings: [],
});

const dir = mkdtempSync(join(tmpdir(), "idemkey-example-ai-"));
const ledger = join(dir, "ledger.db");
// The webhook delivery this run handles: a redelivery, or a re-run after a crash, has the same id.
const taskId = "webhook-delivery-dlv_51";

console.log("Process 1: the model asks for the same email twice, then the process dies.");
const store1 = sqliteStore(ledger);
let calls = 0;
await generateText({
  model: new MockLanguageModelV3({
    doGenerate: async () => {
      if (++calls === 1) return step(email("call_1"), email("call_2"));
      throw new Error("process killed");
    },
  }),
  tools: idempotentTools(
    createHarness({ store: store1, onEvent: (e) => console.log(`  harness: ${e.type} ${e.tool}`) }),
    tools,
    {
      taskId,
      effects: { sendEmail: "keyed" },
    },
  ),
  prompt: "Tell Dana her refund is on its way.",
  stopWhen: stepCountIs(3),
}).catch((error: Error) => console.log(`  run failed: ${error.message}`));
await store1.close();
console.log(`  emails sent so far: ${outbox.length}`);

console.log("Process 2: the whole step is re-run; the model re-samples the call as call_9.");
const store2 = sqliteStore(ledger);
const result = await generateText({
  model: new MockLanguageModelV3({
    doGenerate: [
      step(email("call_9")),
      {
        content: [{ type: "text", text: "Done." }],
        finishReason: { unified: "stop", raw: undefined },
        usage,
        warnings: [],
      },
    ],
  }),
  tools: idempotentTools(
    createHarness({ store: store2, onEvent: (e) => console.log(`  harness: ${e.type} ${e.tool}`) }),
    tools,
    { taskId, effects: { sendEmail: "keyed" } },
  ),
  prompt: "Tell Dana her refund is on its way.",
  stopWhen: stepCountIs(3),
});
await store2.close();
rmSync(dir, { recursive: true, force: true });

const output = result.steps[0]?.toolResults[0]?.output;
console.log(`  the model was shown ${JSON.stringify(output)}, the output recorded by process 1`);
console.log(`Emails sent: ${outbox.length}`);
if (outbox.length !== 1) process.exitCode = 1;
