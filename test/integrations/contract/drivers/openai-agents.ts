import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  Runner,
  Usage,
} from "@openai/agents";
import { idemkeyContext, idempotentTool } from "../../../../src/openai-agents/index.js";
import type { Driver } from "../driver.js";
import { textOf } from "../world.js";

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

/** `idempotentTool` (OpenAI Agents SDK) under `Runner.run` with a scripted model; errors as the SDK shows them. */
export const openaiAgentsDriver: Driver = {
  name: "idempotentTool (OpenAI Agents SDK)",
  async open(world) {
    const { name, effect, noEffect } = world.spec;
    const errors: unknown[] = [];
    const refund = idempotentTool(world.harness(), {
      name,
      description: "Refund a payment.",
      parameters: world.schema(),
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
    const agent = new Agent({ name: "billing", instructions: "Refund.", tools: [refund] });
    return {
      async call(args, options) {
        const model = new OneCallModel(name, args);
        const runner = new Runner({ modelProvider: { getModel: () => model }, tracingDisabled: true });
        const failed = errors.length;
        await runner.run(agent, "Refund Dana.", options?.signal ? { signal: options.signal } : {});
        const text = textOf(model.shown);
        return errors.length > failed ? { text, error: errors.at(-1) } : { text };
      },
    };
  },
};
