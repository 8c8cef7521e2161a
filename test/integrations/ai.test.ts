import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateText, stepCountIs, streamText, type ToolExecutionOptions, tool } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { afterAll, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { idemkeyContext, idempotentTools } from "../../src/ai/index.js";
import { defaultModelTexts } from "../../src/harness/model-texts.js";
import { createHarness, type HarnessEvent, idempotencyKey, ToolCallError } from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { callsStep, INPUT, textStep, toolCall, usage } from "./fixtures/ai-steps.js";
import { mailer, sent } from "./fixtures/mailer.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-ai-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (ext: string) => join(dir, `f-${++files}.${ext}`);

/** The AI SDK tools of the app: `sendEmail` writes through the fake mailer, with the key idemkey hands it. */
function appTools(effects: string) {
  const mail = mailer(effects);
  return {
    sendEmail: tool({
      description: "Send an email to a customer.",
      inputSchema: z.object({ to: z.string(), subject: z.string() }),
      execute: async (input, options) => mail.send(input, idemkeyContext(options)?.idempotencyKey),
    }),
    lookupOrder: tool({
      description: "Look up an order.",
      inputSchema: z.object({ id: z.string() }),
      execute: async ({ id }) => ({ id, status: "shipped" }),
    }),
    askUser: tool({
      description: "Ask the user (answered by the client).",
      inputSchema: z.object({ q: z.string() }),
    }),
  };
}

/** The tool results the model was shown in its last prompt. */
function toolResults(model: MockLanguageModelV3): { toolCallId: string; output: unknown }[] {
  const prompt = model.doGenerateCalls.at(-1)?.prompt ?? model.doStreamCalls.at(-1)!.prompt;
  return prompt
    .filter((m) => m.role === "tool")
    .flatMap((m) => m.content)
    .filter((p) => p.type === "tool-result")
    .map((p) => ({ toolCallId: p.toolCallId, output: p.output }));
}

const effects = { sendEmail: "keyed", lookupOrder: "read" } as const;

/** What the model reads of a `sendEmail` call answered from the ledger. */
const replayedText = (output: string) =>
  `${defaultModelTexts.replayed({ tool: "sendEmail", key: "" })}\n\n${output}`;

describe("idempotentTools with generateText and the SDK's mock model", () => {
  it("runs the same tool call emitted twice in one step once; both calls get its output", async () => {
    const out = file("jsonl");
    const model = new MockLanguageModelV3({
      doGenerate: [callsStep(toolCall("call_1"), toolCall("call_2")), textStep],
    });
    const result = await generateText({
      model,
      tools: idempotentTools(createHarness(), appTools(out), { taskId: "chat-9:msg-3", effects }),
      prompt: "Tell Dana her refund is on its way.",
      stopWhen: stepCountIs(3),
    });

    expect(result.text).toBe("Done.");
    expect(sent(out)).toEqual([
      { seq: 1, ...INPUT, key: idempotencyKey("chat-9:msg-3", "sendEmail", INPUT) },
    ]);
    // The second call waited for the first: the model reads that it was done already, then its output.
    expect(toolResults(model)).toEqual([
      { toolCallId: "call_1", output: { type: "json", value: { messageId: "msg-1" } } },
      { toolCallId: "call_2", output: { type: "text", value: replayedText('{"messageId":"msg-1"}') } },
    ]);
    expect(result.steps[0]!.toolResults.map((r) => r.output)).toEqual([
      { messageId: "msg-1" },
      { messageId: "msg-1" },
    ]);
  });

  it("replays the call when a later step repeats it under a new tool call id", async () => {
    const out = file("jsonl");
    const events: HarnessEvent[] = [];
    const model = new MockLanguageModelV3({
      doGenerate: [callsStep(toolCall("call_a")), callsStep(toolCall("call_b")), textStep],
    });
    await generateText({
      model,
      tools: idempotentTools(createHarness({ onEvent: (e) => events.push(e) }), appTools(out), {
        taskId: "job-77",
        effects,
      }),
      prompt: "Send it.",
      stopWhen: stepCountIs(4),
    });
    expect(sent(out)).toHaveLength(1);
    expect(events.map((e) => e.type)).toEqual(["executed", "replayed"]);
    expect(toolResults(model).at(-1)).toEqual({
      toolCallId: "call_b",
      output: { type: "text", value: replayedText('{"messageId":"msg-1"}') },
    });
  });

  it("re-runs a whole step after a crash with a new harness on the same SQLite file: one effect", async () => {
    const out = file("jsonl");
    const db = file("db");
    const store1 = sqliteStore(db);
    let steps = 0;
    const crashing = new MockLanguageModelV3({
      doGenerate: async () => {
        if (++steps === 1) return callsStep(toolCall("call_x1"));
        throw new Error("the process died here");
      },
    });
    await expect(
      generateText({
        model: crashing,
        tools: idempotentTools(createHarness({ store: store1 }), appTools(out), {
          taskId: "webhook-dlv_51",
          effects,
        }),
        prompt: "Handle the refund webhook.",
        stopWhen: stepCountIs(3),
      }),
    ).rejects.toThrow();
    await store1.close();
    expect(sent(out)).toHaveLength(1);

    // The new process: another harness and store on the same file, the model re-sampled with new tool call ids.
    const store2 = sqliteStore(db);
    const model = new MockLanguageModelV3({ doGenerate: [callsStep(toolCall("call_y7")), textStep] });
    const events: HarnessEvent[] = [];
    await generateText({
      model,
      tools: idempotentTools(
        createHarness({ store: store2, onEvent: (e) => events.push(e) }),
        appTools(out),
        {
          taskId: "webhook-dlv_51",
          effects,
        },
      ),
      prompt: "Handle the refund webhook.",
      stopWhen: stepCountIs(3),
    });
    await store2.close();

    expect(sent(out)).toHaveLength(1);
    expect(events.map((e) => e.type)).toEqual(["replayed"]);
    expect(toolResults(model)).toEqual([
      { toolCallId: "call_y7", output: { type: "text", value: replayedText('{"messageId":"msg-1"}') } },
    ]);
  });

  it("keys calls by the task id from the context: another turn is another call", async () => {
    const out = file("jsonl");
    const harness = createHarness();
    const tools = idempotentTools(harness, appTools(out), {
      taskId: (options: ToolExecutionOptions) => (options.experimental_context as { turnId: string }).turnId,
      effects,
    });
    const run = (turnId: string) =>
      generateText({
        model: new MockLanguageModelV3({ doGenerate: [callsStep(toolCall(`call-${turnId}`)), textStep] }),
        tools,
        prompt: "Send it.",
        stopWhen: stepCountIs(3),
        experimental_context: { turnId },
      });
    await run("turn-1");
    await run("turn-1");
    await run("turn-2");
    expect(sent(out).map((s) => s.key)).toEqual([
      idempotencyKey("turn-1", "sendEmail", INPUT),
      idempotencyKey("turn-2", "sendEmail", INPUT),
    ]);
  });

  it("leaves everything the model sees unchanged", async () => {
    const original = appTools(file("jsonl"));
    const wrapped = idempotentTools(createHarness(), original, { taskId: "t", effects });
    expect(Object.keys(wrapped)).toEqual(Object.keys(original));
    expect(wrapped.sendEmail.description).toBe(original.sendEmail.description);
    expect(wrapped.askUser).toBe(original.askUser);
    expect(wrapped.sendEmail.execute).not.toBe(original.sendEmail.execute);

    const seen = async (tools: typeof original) => {
      const model = new MockLanguageModelV3({ doGenerate: [textStep] });
      await generateText({ model, tools, prompt: "Hi" });
      return model.doGenerateCalls[0]!.tools;
    };
    const plain = await seen(original);
    expect(await seen(wrapped)).toEqual(plain);
    expect(JSON.stringify(plain)).not.toMatch(/idempotency|idemkey/i);
  });
});

describe("idempotentTools with streamText", () => {
  it("runs the same tool call streamed twice once", async () => {
    const out = file("jsonl");
    let step = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => {
        step++;
        if (step === 1) {
          return {
            stream: convertArrayToReadableStream([
              { type: "stream-start" as const, warnings: [] },
              toolCall("s_1"),
              toolCall("s_2"),
              {
                type: "finish" as const,
                finishReason: { unified: "tool-calls" as const, raw: undefined },
                usage,
              },
            ]),
          };
        }
        return {
          stream: convertArrayToReadableStream([
            { type: "stream-start" as const, warnings: [] },
            { type: "text-start" as const, id: "t" },
            { type: "text-delta" as const, id: "t", delta: "Done." },
            { type: "text-end" as const, id: "t" },
            { type: "finish" as const, finishReason: { unified: "stop" as const, raw: undefined }, usage },
          ]),
        };
      },
    });
    const result = streamText({
      model,
      tools: idempotentTools(createHarness(), appTools(out), { taskId: "chat-2:msg-1", effects }),
      prompt: "Send it.",
      stopWhen: stepCountIs(3),
    });
    expect(await result.text).toBe("Done.");
    expect(sent(out)).toHaveLength(1);
    expect(toolResults(model).map((r) => r.output)).toEqual([
      { type: "json", value: { messageId: "msg-1" } },
      { type: "text", value: replayedText('{"messageId":"msg-1"}') },
    ]);
  });
});

describe("idempotentTools options", () => {
  const tools = appTools(join(dir, "unused.jsonl"));
  const harness = createHarness();

  it("names the option at fault", () => {
    expect(() => idempotentTools(harness, tools, { taskId: "t", effects: { sendEmail: "keyed" } })).toThrow(
      /options\.effects\.lookupOrder is missing/,
    );
    expect(() =>
      idempotentTools(harness, tools, { taskId: "t", effects: { ...effects, sendEmial: "keyed" } as never }),
    ).toThrow(/options\.effects\.sendEmial names no tool/);
    expect(() =>
      idempotentTools(harness, tools, { taskId: "t", effects: { ...effects, sendEmail: "once" as never } }),
    ).toThrow(/options\.effects\.sendEmail must be one of/);
    expect(() =>
      idempotentTools(harness, tools, {
        taskId: "t",
        effects: { ...effects, sendEmail: { effect: "keyed", identity: "to" as never } },
      }),
    ).toThrow(/options\.effects\.sendEmail\.identity/);
    expect(() => idempotentTools(harness, tools, { taskId: "", effects })).toThrow(/options\.taskId/);
    expect(() => idempotentTools({} as never, tools, { taskId: "t", effects })).toThrow(/harness/);
  });

  it("rejects a task id function that returns no id, before the tool runs", async () => {
    const out = file("jsonl");
    const wrapped = idempotentTools(harness, appTools(out), { taskId: () => undefined as never, effects });
    const options = { toolCallId: "c", messages: [] };
    await expect(Promise.resolve().then(() => wrapped.sendEmail.execute!(INPUT, options))).rejects.toThrow(
      /options\.taskId must return a non-empty string/,
    );
    expect(sent(out)).toHaveLength(0);
  });

  it("keys by the identity when one is given", async () => {
    const out = file("jsonl");
    const wrapped = idempotentTools(harness, appTools(out), {
      taskId: "t-id",
      effects: { ...effects, sendEmail: { effect: "keyed", identity: (input) => ({ to: input.to }) } },
    });
    const options = { toolCallId: "c", messages: [] };
    await wrapped.sendEmail.execute!(INPUT, options);
    await wrapped.sendEmail.execute!({ ...INPUT, subject: "Your refund (re-worded)" }, options);
    expect(sent(out).map((s) => s.key)).toEqual([idempotencyKey("t-id", "sendEmail", { to: INPUT.to })]);
  });

  it("refuses a streaming execute, which it cannot record", async () => {
    const streaming = {
      stream: tool({
        inputSchema: z.object({}),
        execute: async function* () {
          yield { partial: true };
        },
      }),
    };
    const wrapped = idempotentTools(harness, streaming, { taskId: "t", effects: { stream: "keyed" } });
    await expect(
      Promise.resolve(wrapped.stream.execute!({}, { toolCallId: "c", messages: [] })),
    ).rejects.toBeInstanceOf(ToolCallError);
  });

  it("gives no context to a tool called outside idempotentTools", () => {
    expect(idemkeyContext({ toolCallId: "c", messages: [] })).toBeUndefined();
  });

  it("keeps the tools' types, and types identity by the tool's input", () => {
    const original = appTools(join(dir, "unused.jsonl"));
    const wrapped = idempotentTools(harness, original, {
      taskId: "t",
      effects: {
        sendEmail: {
          effect: "keyed",
          identity: (input) => {
            expectTypeOf(input).toEqualTypeOf<{ to: string; subject: string }>();
            return input.to;
          },
        },
        lookupOrder: "read",
      },
    });
    expectTypeOf(wrapped).toEqualTypeOf<typeof original>();
  });
});
