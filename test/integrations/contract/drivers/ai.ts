import * as ai6 from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { idemkeyContext, idempotentTools } from "../../../../src/ai/index.js";
import { textStep, usage } from "../../fixtures/ai-steps.js";
import type { Driver } from "../driver.js";
import { textOf } from "../world.js";

/** What the driver uses of an AI SDK major: both 6 and 7 take the same shapes here. */
export interface AiSdk {
  generateText: typeof ai6.generateText;
  stepCountIs: typeof ai6.stepCountIs;
  tool: typeof ai6.tool;
  MockLanguageModel: typeof MockLanguageModelV3;
}

/** `idempotentTools` under `generateText` with the SDK's mock model: one tool call, then text. */
export const aiDriver = (
  name: string,
  { generateText, stepCountIs, tool, MockLanguageModel }: AiSdk,
  skip?: string,
): Driver => ({
  name,
  ...(skip === undefined ? {} : { skip }),
  cannot: {
    approval:
      "idempotentTools takes no approval option: the AI SDK's own needsApproval decides before execute, outside the " +
      "ledger, and idemkey binds no key to it",
  },
  async open(world) {
    const { name, effect, noEffect } = world.spec;
    const tools = idempotentTools(
      world.harness(),
      {
        [name]: tool({
          description: "Refund a payment.",
          inputSchema: world.schema(),
          execute: async (_input, options) => world.owner.act(idemkeyContext(options)?.idempotencyKey),
        }),
      },
      { taskId: world.taskId, effects: { [name]: { effect, noEffect } } },
    );
    return {
      async call(args, options) {
        const model = new MockLanguageModel({
          doGenerate: [
            {
              content: [
                { type: "tool-call", toolCallId: "call_1", toolName: name, input: JSON.stringify(args) },
              ],
              finishReason: { unified: "tool-calls", raw: undefined },
              usage,
              warnings: [],
            },
            textStep,
          ],
        });
        await generateText({
          model,
          tools,
          prompt: "Refund Dana.",
          stopWhen: stepCountIs(3),
          ...(options?.signal ? { abortSignal: options.signal } : {}),
        });
        // What the model was shown: the tool result in its second prompt.
        const output = model.doGenerateCalls
          .at(-1)
          ?.prompt.filter((m) => m.role === "tool")
          .flatMap((m) => m.content)
          .find((p) => p.type === "tool-result")?.output as { type: string; value: unknown } | undefined;
        if (output === undefined) throw new Error("the model was shown no tool result");
        const text = textOf(output.value);
        return output.type.startsWith("error") ? { text, error: output } : { text };
      },
    };
  },
});

/** AI SDK 6, the `ai` the project installs. */
export const ai6Driver = aiDriver("idempotentTools (AI SDK 6)", {
  ...ai6,
  MockLanguageModel: MockLanguageModelV3,
});
