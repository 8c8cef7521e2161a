import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  RunContext,
  Runner,
  RunState,
  type Tool,
  tool,
  Usage,
} from "@openai/agents";
import { afterAll, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { defaultModelTexts } from "../../src/harness/model-texts.js";
import { createHarness, type Harness, type HarnessEvent, idempotencyKey } from "../../src/index.js";
import { idemkeyContext, idempotentTool } from "../../src/openai-agents/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { effectLog, effects } from "./fixtures/effect-log.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-agents-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (ext: string) => join(dir, `f-${++files}.${ext}`);

type Ctx = { ticketId: string };
type Tools = Tool<Ctx>[];
const NOTE = { text: "Customer asked for a refund" };
const REFUND = { paymentId: "pay_881", cents: 4_999 };

/**
 * A scripted model, no network: while the input holds no tool output it asks for `add_note` and `refund` (with call
 * ids that differ per model instance, as a re-sampled turn's would); then it answers with the outputs it was shown.
 */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly sample: string) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const items: AgentInputItem[] = Array.isArray(request.input) ? request.input : [];
    const outputs = items.flatMap((item) =>
      item.type === "function_call_result" ? [{ name: item.name, output: item.output }] : [],
    );
    if (outputs.length === 0) {
      return {
        usage: new Usage(),
        output: [
          call(`note_${this.sample}`, "add_note", NOTE),
          call(`refund_${this.sample}`, "refund", REFUND),
        ],
      };
    }
    const text = JSON.stringify(outputs);
    return {
      usage: new Usage(),
      output: [
        {
          type: "message",
          id: `m_${this.sample}`,
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text }],
        },
      ],
    };
  }

  // biome-ignore lint/correctness/useYield: the tests only use getResponse.
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not scripted");
  }
}

function call(callId: string, name: string, args: object) {
  return {
    type: "function_call" as const,
    id: `fc_${callId}`,
    callId,
    name,
    status: "completed" as const,
    arguments: JSON.stringify(args),
  };
}

function runner(model: Model): Runner {
  const modelProvider: ModelProvider = { getModel: () => model };
  return new Runner({ modelProvider, tracingDisabled: true });
}

/** The app's tools on `harness`; both write through the fake owner at `log`. */
function appTools(harness: Harness, log: string): Tools {
  const owner = effectLog(log);
  const addNote = idempotentTool(harness, {
    name: "add_note",
    description: "Add a note to the ticket.",
    parameters: z.object({ text: z.string() }),
    effect: "keyed",
    taskId: (runContext: RunContext<Ctx>) => runContext.context.ticketId,
    execute: async (input, _runContext, details) =>
      owner.apply("note", input, idemkeyContext(details)?.idempotencyKey),
  });
  const refund = idempotentTool(harness, {
    name: "refund",
    description: "Refund a payment.",
    parameters: z.object({ paymentId: z.string(), cents: z.number() }),
    needsApproval: true,
    effect: "keyed",
    taskId: (runContext: RunContext<Ctx>) => runContext.context.ticketId,
    execute: async (input, _runContext, details) =>
      owner.apply("refund", input, idemkeyContext(details)?.idempotencyKey),
  });
  return [addNote, refund];
}

/** The same tools, plain SDK `tool()`s without idemkey: the control that shows what the tests would catch. */
function plainTools(log: string): Tools {
  const owner = effectLog(log);
  return [
    tool({
      name: "add_note",
      description: "Add a note to the ticket.",
      parameters: z.object({ text: z.string() }),
      execute: async (input) => owner.apply("note", input, undefined),
    }),
    tool({
      name: "refund",
      description: "Refund a payment.",
      parameters: z.object({ paymentId: z.string(), cents: z.number() }),
      needsApproval: true,
      execute: async (input) => owner.apply("refund", input, undefined),
    }),
  ];
}

const agentWith = (tools: Tools) =>
  new Agent<Ctx>({ name: "support", instructions: "Resolve the ticket.", tools });

/**
 * Runs until the refund asks for approval and returns the serialized state, then resumes it twice from that same
 * string with the approval granted, each time in a "new process" (new tools, harness and store on the same file):
 * the second resume is what an app does when it crashed after resuming but before it saved the new state.
 */
async function interruptAndResumeTwice(makeTools: () => Promise<Tools>) {
  const first = await runner(new ScriptedModel("1")).run(agentWith(await makeTools()), "Refund ticket T-1", {
    context: { ticketId: "T-1" },
  });
  expect(first.interruptions.map((i) => i.name)).toEqual(["refund"]);
  const saved = first.state.toString();
  const finals: string[] = [];
  for (const sample of ["2", "3"]) {
    const agent = agentWith(await makeTools());
    const state = await RunState.fromString<Ctx, typeof agent>(agent, saved);
    for (const interruption of state.getInterruptions()) state.approve(interruption);
    const resumed = await runner(new ScriptedModel(sample)).run(agent, state);
    finals.push(String(resumed.finalOutput));
  }
  return finals;
}

describe("idempotentTool with the OpenAI Agents SDK and a scripted model", () => {
  it("a run interrupted for approval and resumed from serialized state twice runs each effect once", async () => {
    const log = file("jsonl");
    const db = file("db");
    const stores: ReturnType<typeof sqliteStore>[] = [];
    const events: HarnessEvent[] = [];
    const finals = await interruptAndResumeTwice(async () => {
      await stores.at(-1)?.close();
      const store = sqliteStore(db);
      stores.push(store);
      return appTools(createHarness({ store, onEvent: (e) => events.push(e) }), log);
    });
    await stores.at(-1)!.close();

    expect(effects(log)).toEqual([
      { seq: 1, kind: "note", input: NOTE, key: idempotencyKey("T-1", "add_note", NOTE) },
      { seq: 2, kind: "refund", input: REFUND, key: idempotencyKey("T-1", "refund", REFUND) },
    ]);
    expect(events.map((e) => `${e.type}:${e.tool}`)).toEqual([
      "executed:add_note",
      "executed:refund",
      "replayed:refund",
    ]);
    // The second resume showed the model the refund id recorded by the first, after the replayed text.
    expect(JSON.parse(finals[0]!)).toContainEqual({
      name: "refund",
      output: { type: "text", text: "refund-2" },
    });
    expect(JSON.parse(finals[1]!)).toContainEqual({
      name: "refund",
      output: {
        type: "text",
        text: `${defaultModelTexts.replayed({ tool: "refund", key: "" })}\n\nrefund-2`,
      },
    });
  });

  it("(control) the same runs with plain SDK tools refund twice", async () => {
    const log = file("jsonl");
    await interruptAndResumeTwice(async () => plainTools(log));
    expect(effects(log).map((e) => e.kind)).toEqual(["note", "refund", "refund"]);
  });

  it("replays a call the model re-samples with a new call id when the run starts over", async () => {
    const log = file("jsonl");
    const harness = createHarness();
    const agent = agentWith(appTools(harness, log));
    await runner(new ScriptedModel("a")).run(agent, "Refund ticket T-2", { context: { ticketId: "T-2" } });
    await runner(new ScriptedModel("b")).run(agent, "Refund ticket T-2", { context: { ticketId: "T-2" } });
    await runner(new ScriptedModel("c")).run(agent, "Refund ticket T-3", { context: { ticketId: "T-3" } });
    // The refund needs approval and was never approved; the note ran once per ticket.
    expect(effects(log).map((e) => [e.kind, e.key])).toEqual([
      ["note", idempotencyKey("T-2", "add_note", NOTE)],
      ["note", idempotencyKey("T-3", "add_note", NOTE)],
    ]);
  });

  it("leaves the tools the model sees unchanged", async () => {
    const seen = async (tools: Tools) => {
      const model = new ScriptedModel("x");
      await runner(model).run(agentWith(tools), "Refund ticket T-9", { context: { ticketId: "T-9" } });
      return model.requests[0]!.tools;
    };
    const plain = await seen(plainTools(file("jsonl")));
    const wrapped = await seen(appTools(createHarness(), file("jsonl")));
    expect(wrapped).toEqual(plain);
    expect(JSON.stringify(plain)).not.toMatch(/idempotency|idemkey/i);
  });

  it("does not record a failed call: the SDK shows the model the error, and the next call runs again", async () => {
    const log = file("jsonl");
    const owner = effectLog(log);
    let failures = 1;
    const flaky = idempotentTool(createHarness({ retry: { retries: 0 } }), {
      name: "add_note",
      description: "Add a note to the ticket.",
      parameters: z.object({ text: z.string() }),
      effect: "keyed",
      taskId: (runContext: RunContext<Ctx>) => runContext.context.ticketId,
      execute: async (input) => {
        if (failures-- > 0) throw new Error("notes service unavailable");
        return owner.apply("note", input, undefined);
      },
    });
    const runContext = new RunContext<Ctx>({ ticketId: "T-4" });
    const failed = await flaky.invoke(runContext, JSON.stringify(NOTE));
    expect(String(failed)).toMatch(/An error occurred/);
    expect(await flaky.invoke(runContext, JSON.stringify(NOTE))).toBe("note-1");
    expect(await flaky.invoke(runContext, JSON.stringify(NOTE))).toMatch(/already done[\s\S]*\n\nnote-1$/);
    expect(effects(log)).toHaveLength(1);
  });
});

describe("idempotentTool options", () => {
  const base = {
    name: "add_note",
    description: "Add a note.",
    parameters: z.object({ text: z.string() }),
    execute: async () => "ok",
  };

  it("names the option at fault", () => {
    const harness = createHarness();
    expect(() => idempotentTool(harness, { ...base, effect: "keyed" } as never)).toThrow(/options\.taskId/);
    expect(() => idempotentTool(harness, { ...base, effect: "twice" as never, taskId: () => "t" })).toThrow(
      /tool\.effect/,
    );
    expect(() => idempotentTool({} as never, { ...base, effect: "keyed", taskId: () => "t" })).toThrow(
      /harness/,
    );
  });

  it("tells the model when the task id function returns none, and does not run the tool", async () => {
    let runs = 0;
    const made = idempotentTool(createHarness(), {
      ...base,
      effect: "keyed",
      taskId: () => "" as string,
      execute: async () => {
        runs++;
        return "ok";
      },
    });
    const output = await made.invoke(new RunContext({}), JSON.stringify(NOTE));
    expect(String(output)).toMatch(/An error occurred/);
    expect(runs).toBe(0);
  });

  it("types execute's and identity's input from the parameters, and the task id from the context", () => {
    const made = idempotentTool(createHarness(), {
      ...base,
      effect: "keyed",
      taskId: (runContext: RunContext<Ctx>) => {
        expectTypeOf(runContext.context).toEqualTypeOf<Ctx>();
        return runContext.context.ticketId;
      },
      identity: (input) => {
        expectTypeOf(input).toEqualTypeOf<{ text: string }>();
        return input.text;
      },
      execute: async (input) => {
        expectTypeOf(input).toEqualTypeOf<{ text: string }>();
        return input.text;
      },
    });
    expectTypeOf(made.name).toEqualTypeOf<string>();
  });
});
