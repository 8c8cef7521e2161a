import { AIMessage, type ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { idemkeyContext, idempotentTool } from "../../../../src/langgraph/index.js";
import type { Driver } from "../driver.js";

/** `idempotentTool` (LangGraph) in a `ToolNode`, invoked with the model's tool call as a LangGraph graph does. */
export const langgraphDriver: Driver = {
  name: "idempotentTool (LangGraph ToolNode)",
  async open(world) {
    const { name, effect, noEffect } = world.spec;
    const plain = tool(async () => world.owner.act(idemkeyContext()?.idempotencyKey), {
      name,
      description: "Refund a payment.",
      schema: world.schema(),
    });
    const wrapped = idempotentTool(world.harness(), plain, {
      effect,
      noEffect,
      taskId: () => world.taskId,
    } as Parameters<typeof idempotentTool>[2]);
    const node = new ToolNode([wrapped]);
    return {
      async call(args, options) {
        const message = new AIMessage({
          content: "",
          tool_calls: [{ name, args, id: "call_1", type: "tool_call" }],
        });
        const out = (await node.invoke(
          { messages: [message] },
          options?.signal ? { signal: options.signal } : {},
        )) as {
          messages: ToolMessage[];
        };
        const answer = out.messages[0]!;
        const text = typeof answer.content === "string" ? answer.content : JSON.stringify(answer.content);
        return answer.status === "error" ? { text, error: answer } : { text };
      },
    };
  },
};
