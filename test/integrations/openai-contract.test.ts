import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type RunContext,
  Runner,
  Usage,
} from "@openai/agents";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHarness, type Harness, idempotencyKey, memoryStore } from "../../src/index.js";
import { idemkeyContext, idempotentTool } from "../../src/openai-agents/index.js";
import { effectLog, effects } from "./fixtures/effect-log.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-agents-contract-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = () => join(dir, `f-${++files}.jsonl`);

type Ctx = { ticketId: string };
const REFUND = { paymentId: "pay_881", cents: 4_999 };

class Declined extends Error {
  override name = "Declined";
}

/** Asks for one `refund` under `callId`, then answers with the tool output it was shown (its prompt, recorded). */
class ScriptedModel implements Model {
  shown = "";
  constructor(private readonly callId: string) {}
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const items: AgentInputItem[] = Array.isArray(request.input) ? request.input : [];
    const outputs = items.filter((item) => item.type === "function_call_result");
    if (outputs.length === 0) {
      const call = {
        type: "function_call" as const,
        id: `fc_${this.callId}`,
        callId: this.callId,
        name: "refund",
        status: "completed" as const,
        arguments: JSON.stringify(REFUND),
      };
      return { usage: new Usage(), output: [call] };
    }
    this.shown = JSON.stringify(outputs);
    const message = {
      type: "message" as const,
      id: `m_${this.callId}`,
      role: "assistant" as const,
      status: "completed" as const,
      content: [{ type: "output_text" as const, text: "Done." }],
    };
    return { usage: new Usage(), output: [message] };
  }
  // biome-ignore lint/correctness/useYield: the tests only use getResponse.
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not scripted");
  }
}

/** A refund whose schema draws a request id (unless not `generated`); declines while `state.declines`, throws after it while `failAfter`. */
function refundTool(
  harness: Harness,
  log: string,
  effect: "keyed" | "unguarded",
  state = { declines: 0, failAfter: 0 },
  generated = true,
) {
  const owner = effectLog(log);
  const Refund = z.object({ paymentId: z.string(), cents: z.number() });
  return idempotentTool(harness, {
    name: "refund",
    description: "Refund a payment.",
    parameters: generated ? Refund.extend({ requestId: z.string().default(() => randomUUID()) }) : Refund,
    effect,
    noEffect: (error) => error instanceof Declined,
    taskId: (runContext: RunContext<Ctx>) => runContext.context.ticketId,
    execute: async (input, _runContext, details) => {
      if (state.declines-- > 0) throw new Declined("card declined: nothing charged");
      const done = owner.apply("refund", input, idemkeyContext(details)?.idempotencyKey);
      if (state.failAfter-- > 0) throw new Error("connection reset after the refund was sent");
      return done;
    },
  });
}

async function turn(tool: ReturnType<typeof refundTool>, callId: string) {
  const model = new ScriptedModel(callId);
  const agent = new Agent<Ctx>({ name: "support", instructions: "Resolve the ticket.", tools: [tool] });
  await new Runner({ modelProvider: { getModel: () => model }, tracingDisabled: true }).run(
    agent,
    "Refund it",
    {
      context: { ticketId: "T-1" },
    },
  );
  return model.shown;
}

describe("idempotentTool keys what the model sent, not what the schema generated", () => {
  it("a replay in a restarted app, whose schema draws a request id, refunds once", async () => {
    const log = file();
    const ledger = memoryStore();
    await turn(refundTool(createHarness({ store: ledger }), log, "keyed"), "call_1");
    await turn(refundTool(createHarness({ store: ledger }), log, "keyed"), "call_2");
    expect(effects(log).map((e) => e.key)).toEqual([idempotencyKey("T-1", "refund", REFUND)]);
  });
});

describe("idempotentTool reads errors by the one rule", () => {
  it("a declared no-effect error releases the key: the identical call runs later, once", async () => {
    const log = file();
    const tool = refundTool(
      createHarness({ retry: { retries: 0 } }),
      log,
      "unguarded",
      { declines: 1, failAfter: 0 },
      false,
    );
    expect(await turn(tool, "call_1")).toMatch(/An error occurred/);
    expect(effects(log)).toHaveLength(0);
    await turn(tool, "call_2");
    expect(effects(log)).toHaveLength(1);
  });

  it("an undeclared error after the effect is an unknown outcome, told to the model: one effect", async () => {
    const log = file();
    const tool = refundTool(
      createHarness({ retry: { retries: 0 } }),
      log,
      "unguarded",
      { declines: 0, failAfter: 1 },
      false,
    );
    const shown = [await turn(tool, "call_1"), await turn(tool, "call_2")];
    expect(effects(log)).toHaveLength(1);
    for (const text of shown) {
      expect(text).toMatch(/may or may not have taken effect/);
      expect(text).toContain(idempotencyKey("T-1", "refund", REFUND));
    }
  });
});

describe("idempotentTool tells the model what happened", () => {
  it("a replayed string output reaches the model after the replayed text", async () => {
    const log = file();
    const tool = refundTool(createHarness(), log, "keyed");
    expect(await turn(tool, "call_1")).not.toMatch(/already done/);
    const shown = await turn(tool, "call_2");
    expect(shown).toMatch(/action was already done earlier in this task[^"]*refund-1/);
    expect(effects(log)).toHaveLength(1);
  });

  it("createHarness({ modelTexts }) replaces both texts", async () => {
    const modelTexts = {
      replayed: ({ tool }: { tool: string }) => `REPLAYED ${tool}`,
      outcomeUnknown: ({ key }: { key: string }) => `UNKNOWN ${key}`,
    };
    const replaying = refundTool(createHarness({ modelTexts }), file(), "keyed");
    await turn(replaying, "call_1");
    expect(await turn(replaying, "call_2")).toMatch(/REPLAYED refund\\n\\nrefund-1/);
    const failing = refundTool(createHarness({ modelTexts, retry: { retries: 0 } }), file(), "unguarded", {
      declines: 0,
      failAfter: 1,
    });
    expect(await turn(failing, "call_3")).toContain(`UNKNOWN ${idempotencyKey("T-1", "refund", REFUND)}`);
  });
});
