import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { idemkeyContext, idempotentTools } from "../../src/ai/index.js";
import { createHarness, type Harness, idempotencyKey, memoryStore } from "../../src/index.js";
import { callsStep, INPUT, textStep, toolCall } from "./fixtures/ai-steps.js";
import { mailer, sent } from "./fixtures/mailer.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-ai-contract-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = () => join(dir, `f-${++files}.jsonl`);

class Declined extends Error {
  override name = "Declined";
}

/**
 * `sendEmail`, whose schema draws a message id when the model leaves it out (unless not `generated`); it declines while `state.declines`,
 * and throws after sending while `state.failAfter`.
 */
function emailTool(out: string, state = { declines: 0, failAfter: 0 }, generated = true) {
  const mail = mailer(out);
  const Email = z.object({ to: z.string(), subject: z.string() });
  return {
    sendEmail: tool({
      description: "Send an email to a customer.",
      inputSchema: generated ? Email.extend({ messageId: z.string().default(() => randomUUID()) }) : Email,
      execute: async (input, options) => {
        if (state.declines-- > 0) throw new Declined("mailbox full: nothing sent");
        const done = mail.send(input, idemkeyContext(options)?.idempotencyKey);
        if (state.failAfter-- > 0) throw new Error("connection reset after the message was sent");
        return done;
      },
    }),
  };
}

/** One turn of the model: it calls `sendEmail` once (under `callId`), then answers. */
async function turn(harness: Harness, tools: ReturnType<typeof emailTool>, callId: string, effect = "keyed") {
  const model = new MockLanguageModelV3({ doGenerate: [callsStep(toolCall(callId)), textStep] });
  const result = await generateText({
    model,
    tools: idempotentTools(harness, tools, {
      taskId: "chat-1:msg-1",
      effects: {
        sendEmail: {
          effect: effect as "keyed",
          noEffect: (error) => error instanceof Declined,
        },
      },
    }),
    prompt: "Tell Dana her refund is on its way.",
    stopWhen: stepCountIs(3),
  });
  const shown = model.doGenerateCalls
    .at(-1)!
    .prompt.filter((m) => m.role === "tool")
    .flatMap((m) => m.content)
    .map((p) => (p.type === "tool-result" ? p.output : undefined));
  return { result, shown: JSON.stringify(shown) };
}

describe("idempotentTools keys what the model sent, not what the schema generated", () => {
  it("a replay in a restarted app, whose schema draws a message id, sends once", async () => {
    const out = file();
    const ledger = memoryStore();
    await turn(createHarness({ store: ledger }), emailTool(out), "call_1");
    await turn(createHarness({ store: ledger }), emailTool(out), "call_2");
    expect(sent(out)).toEqual([
      expect.objectContaining({ seq: 1, key: idempotencyKey("chat-1:msg-1", "sendEmail", INPUT) }),
    ]);
  });
});

describe("idempotentTools reads errors by the one rule", () => {
  it("a declared no-effect error releases the key: the identical call runs later, once", async () => {
    const out = file();
    const harness = createHarness({ retry: { retries: 0 } });
    const tools = emailTool(out, { declines: 1, failAfter: 0 }, false);
    const first = await turn(harness, tools, "call_1", "unguarded");
    expect(first.shown).toMatch(/mailbox full/);
    expect(sent(out)).toHaveLength(0);
    await turn(harness, tools, "call_2", "unguarded");
    expect(sent(out)).toHaveLength(1);
  });

  it("an undeclared error after the effect is an unknown outcome: the call never runs again", async () => {
    const out = file();
    const harness = createHarness({ retry: { retries: 0 } });
    const tools = emailTool(out, { declines: 0, failAfter: 1 }, false);
    const first = await turn(harness, tools, "call_1", "unguarded");
    const again = await turn(harness, tools, "call_2", "unguarded");
    expect(sent(out)).toHaveLength(1);
    const errors = [first, again].map((t) => t.result.steps[0]!.content.find((p) => p.type === "tool-error"));
    expect(errors.map((e) => (e?.error as Error | undefined)?.name)).toEqual([
      "OutcomeUnknownError",
      "OutcomeUnknownError",
    ]);
  });
});

describe("idempotentTools tells the model what happened", () => {
  it("a replayed call's output reaches the model after the replayed text; the application reads the recorded output", async () => {
    const out = file();
    const harness = createHarness();
    const tools = emailTool(out);
    const first = await turn(harness, tools, "call_1");
    expect(first.shown).not.toMatch(/already done/);
    const again = await turn(harness, tools, "call_2");
    expect(again.shown).toMatch(/sendEmail\\" action was already done earlier in this task/);
    expect(again.shown).toMatch(/msg-1/);
    expect(again.result.steps[0]!.toolResults.map((r) => r.output)).toEqual([{ messageId: "msg-1" }]);
    expect(sent(out)).toHaveLength(1);
  });

  it("an unknown outcome reaches the model as the outcome-unknown text", async () => {
    const out = file();
    const harness = createHarness({ retry: { retries: 0 } });
    const { shown } = await turn(
      harness,
      emailTool(out, { declines: 0, failAfter: 1 }),
      "call_1",
      "unguarded",
    );
    const key = idempotencyKey("chat-1:msg-1", "sendEmail", INPUT);
    expect(shown).toMatch(/may or may not have taken effect/);
    expect(shown).toContain(key);
  });

  it("createHarness({ modelTexts }) replaces both texts", async () => {
    const modelTexts = {
      replayed: ({ tool }: { tool: string }) => `REPLAYED ${tool}`,
      outcomeUnknown: ({ key }: { key: string }) => `UNKNOWN ${key}`,
    };
    const out = file();
    const harness = createHarness({ modelTexts, retry: { retries: 0 } });
    const tools = emailTool(out);
    await turn(harness, tools, "call_1");
    expect((await turn(harness, tools, "call_2")).shown).toMatch(/REPLAYED sendEmail\\n\\n/);

    const failing = emailTool(file(), { declines: 0, failAfter: 1 });
    const other = createHarness({ modelTexts, retry: { retries: 0 } });
    const { shown } = await turn(other, failing, "call_3", "unguarded");
    expect(shown).toContain(`UNKNOWN ${idempotencyKey("chat-1:msg-1", "sendEmail", INPUT)}`);
  });
});
