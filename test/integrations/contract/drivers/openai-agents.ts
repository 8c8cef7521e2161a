import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  Runner,
  Usage,
} from "@openai/agents";
import { idempotencyKey } from "../../../../src/index.js";
import { idemkeyContext, idempotentTool } from "../../../../src/openai-agents/index.js";
import type { Driver } from "../driver.js";
import { type Seen, textOf, type World } from "../world.js";

/** A model that asks for one tool call, then answers with the output it was shown. */
class OneCallModel implements Model {
  shown: unknown;
  constructor(
    private readonly name: string,
    private readonly args: object,
  ) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const items: AgentInputItem[] = Array.isArray(request.input) ? request.input : [];
    const result = items.find((item) => item.type === "function_call_result");
    if (result === undefined) {
      const call = { callId: "call_1", name: this.name, arguments: JSON.stringify(this.args) };
      return {
        usage: new Usage(),
        output: [{ type: "function_call", id: "fc_1", status: "completed", ...call }],
      };
    }
    this.shown = result.output;
    return {
      usage: new Usage(),
      output: [
        {
          type: "message",
          id: "m_1",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: "Done." }],
        },
      ],
    };
  }

  // biome-ignore lint/correctness/useYield: only getResponse is scripted.
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not scripted");
  }
}

/** A new process's agent with the spec's tool, and the errors its error function was handed. */
function refundAgent(world: World, needsApproval: boolean) {
  const { name, effect, noEffect } = world.spec;
  const errors: unknown[] = [];
  const refund = idempotentTool(world.harness(), {
    name,
    description: "Refund a payment.",
    parameters: world.schema(),
    needsApproval,
    effect,
    noEffect,
    taskId: () => world.taskId,
    execute: async (_input: unknown, _runContext: unknown, details?: object) =>
      world.owner.act(idemkeyContext(details)?.idempotencyKey),
    // The SDK shows the model a failed tool's error as text; the driver also keeps the error itself.
    errorFunction: (_context: unknown, error: unknown) => {
      errors.push(error);
      return `The tool failed: ${error instanceof Error ? error.message : String(error)}`;
    },
  } as Parameters<typeof idempotentTool>[1]);
  return { agent: new Agent({ name: "billing", instructions: "Refund.", tools: [refund] }), errors };
}

/** `idempotentTool` (OpenAI Agents SDK) under `Runner.run` with a scripted model; errors as the SDK shows them. */
export const openaiAgentsDriver: Driver = {
  name: "idempotentTool (OpenAI Agents SDK)",
  async open(world) {
    const { agent, errors } = refundAgent(world, false);
    return {
      async call(args, options) {
        const model = new OneCallModel(world.spec.name, args);
        const runner = new Runner({ modelProvider: { getModel: () => model }, tracingDisabled: true });
        const failed = errors.length;
        await runner.run(agent, "Refund Dana.", options?.signal ? { signal: options.signal } : {});
        const text = textOf(model.shown);
        return errors.length > failed ? { text, error: errors.at(-1) } : { text };
      },
    };
  },
  // `needsApproval`: the SDK's own flow. The run stops with an interruption holding the exact call, and the RunState
  // approved (or rejected) is run again. idemkey takes no part in the decision: the key is the one the approved call
  // runs under (the task, the tool, the arguments the model sent), and the SDK asks again on every new run.
  async askApproval(world, args) {
    const { agent, errors } = refundAgent(world, true);
    const model = new OneCallModel(world.spec.name, args);
    const runner = new Runner({ modelProvider: { getModel: () => model }, tracingDisabled: true });
    const seen = (): Seen => {
      const text = textOf(model.shown);
      return errors.length > 0 ? { text, error: errors.at(-1) } : { text };
    };
    const first = await runner.run(agent, "Refund Dana.");
    const [interruption] = first.interruptions;
    if (interruption === undefined) return seen();
    const raw = interruption.rawItem as { name: string; arguments: string };
    return {
      key: idempotencyKey(world.taskId, raw.name, JSON.parse(raw.arguments)),
      async decide(decision) {
        if (decision.approve) first.state.approve(interruption);
        else first.state.reject(interruption);
        await runner.run(agent, first.state);
        return seen();
      },
    };
  },
};
