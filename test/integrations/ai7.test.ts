import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { idemkeyContext, idempotentTools as wrapForAi6 } from "../../src/ai/index.js";
import {
  createHarness,
  type Effect,
  type Harness,
  type HarnessEvent,
  idempotencyKey,
  memoryStore,
} from "../../src/index.js";
import { needsNode } from "../support/node-version.js";
import { callsStep, INPUT, textStep, toolCall } from "./fixtures/ai-steps.js";
import { mailer, sent } from "./fixtures/mailer.js";

// The same adapter against AI SDK 7 (installed as the alias `ai7`), whose engines want Node 22: imported only there.
const node = needsNode(22, "ai 7");
const ai = node.skip ? undefined : await import("ai7");
const aiTest = node.skip ? undefined : await import("ai7/test");

// idemkey/ai only imports types from "ai", so one build serves both majors; in a project, "ai" is the one it has.
// Here both majors sit side by side and TypeScript sees ai 6's types behind "ai", so the wrapper is re-typed for
// ai 7's tools (the README's blocks are compiled against ai 7 itself in test/readme).
const idempotentTools = wrapForAi6 as unknown as <T>(
  harness: Harness,
  tools: T,
  options: { taskId: string; effects: { [name: string]: Effect } },
) => T;

const dir = mkdtempSync(join(tmpdir(), "idemkey-ai7-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = () => join(dir, `f-${++files}.jsonl`);

function appTools(effects: string) {
  const mail = mailer(effects);
  return {
    sendEmail: ai!.tool({
      description: "Send an email to a customer.",
      inputSchema: z.object({ to: z.string(), subject: z.string() }),
      execute: async (input, options) => mail.send(input, idemkeyContext(options)?.idempotencyKey),
    }),
  };
}

describe.skipIf(node.skip)(`idempotentTools with AI SDK 7${node.label}`, () => {
  it("runs the same tool call emitted twice in one step once; both calls get its output", async () => {
    const out = file();
    const model = new aiTest!.MockLanguageModelV4({
      doGenerate: [callsStep(toolCall("call_1"), toolCall("call_2")), textStep],
    });
    const result = await ai!.generateText({
      model,
      tools: idempotentTools(createHarness(), appTools(out), {
        taskId: "chat-9:msg-3",
        effects: { sendEmail: "keyed" },
      }),
      prompt: "Tell Dana her refund is on its way.",
      stopWhen: ai!.isStepCount(3),
    });
    expect(result.text).toBe("Done.");
    expect(sent(out)).toEqual([
      { seq: 1, ...INPUT, key: idempotencyKey("chat-9:msg-3", "sendEmail", INPUT) },
    ]);
    const outputs = result.steps[0]!.toolResults.map((r) => [r.toolCallId, r.output]);
    expect(outputs).toEqual([
      ["call_1", { messageId: "msg-1" }],
      ["call_2", { messageId: "msg-1" }],
    ]);
  });

  it("replays the call when a later step repeats it under a new tool call id", async () => {
    const out = file();
    const events: HarnessEvent[] = [];
    const model = new aiTest!.MockLanguageModelV4({
      doGenerate: [callsStep(toolCall("call_a")), callsStep(toolCall("call_b")), textStep],
    });
    await ai!.generateText({
      model,
      tools: idempotentTools(createHarness({ onEvent: (e) => events.push(e) }), appTools(out), {
        taskId: "job-77",
        effects: { sendEmail: "keyed" },
      }),
      prompt: "Send it.",
      stopWhen: ai!.isStepCount(4),
    });
    expect(sent(out)).toHaveLength(1);
    expect(events.map((e) => e.type)).toEqual(["executed", "replayed"]);
    // The model read the replayed text before the recorded output.
    const shown = JSON.stringify(model.doGenerateCalls.at(-1)!.prompt.filter((m) => m.role === "tool"));
    expect(shown).toMatch(/action was already done earlier in this task[\s\S]*?msg-1/);
  });

  it("keys what the model sent, not a default the schema generates: a restarted app's replay sends once", async () => {
    const out = file();
    const ledger = memoryStore();
    const mail = mailer(out);
    const tools = {
      sendEmail: ai!.tool({
        description: "Send an email to a customer.",
        inputSchema: z.object({
          to: z.string(),
          subject: z.string(),
          messageId: z.string().default(() => randomUUID()),
        }),
        execute: async (input, options) => mail.send(input, idemkeyContext(options)?.idempotencyKey),
      }),
    };
    for (const callId of ["call_1", "call_2"]) {
      await ai!.generateText({
        model: new aiTest!.MockLanguageModelV4({ doGenerate: [callsStep(toolCall(callId)), textStep] }),
        tools: idempotentTools(createHarness({ store: ledger }), tools, {
          taskId: "job-78",
          effects: { sendEmail: "keyed" },
        }),
        prompt: "Send it.",
        stopWhen: ai!.isStepCount(3),
      });
    }
    expect(sent(out).map((s) => s.key)).toEqual([idempotencyKey("job-78", "sendEmail", INPUT)]);
  });
});
