import { ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { createAgent, FakeToolCallingModel } from "langchain";
import { idemkeyContext, idempotencyMiddleware } from "../../../../src/langchain/index.js";
import type { Driver } from "../driver.js";

/** `idempotencyMiddleware` (LangChain) on `createAgent`'s tool-call hook, with LangChain's fake tool-calling model. */
export const langchainDriver: Driver = {
  name: "idempotencyMiddleware (LangChain createAgent)",
  cannot: {
    approval:
      "idempotencyMiddleware takes no approval option: LangChain's humanInTheLoopMiddleware decides before the tool, " +
      "outside the ledger (key-bound approval is LangGraph's idempotentTool({ requiresApproval }))",
  },
  async open(world) {
    const { name, effect, noEffect } = world.spec;
    const refund = tool(async () => world.owner.act(idemkeyContext()?.idempotencyKey), {
      name,
      description: "Refund a payment.",
      schema: world.schema(),
    });
    const middleware = idempotencyMiddleware(world.harness(), {
      effects: { [name]: { effect, noEffect } },
      taskId: () => world.taskId,
    });
    return {
      async call(args, options) {
        const model = new FakeToolCallingModel({
          toolCalls: [[{ name, args, id: "call_1", type: "tool_call" }], []],
        });
        const agent = createAgent({ model, tools: [refund], middleware: [middleware] });
        const out = await agent.invoke(
          { messages: [{ role: "user", content: "Refund Dana." }] },
          options?.signal ? { signal: options.signal } : {},
        );
        const answer = out.messages.find((m) => ToolMessage.isInstance(m));
        if (answer === undefined) throw new Error("the agent answered no tool message");
        const text = typeof answer.content === "string" ? answer.content : JSON.stringify(answer.content);
        return answer.status === "error" ? { text, error: answer } : { text };
      },
    };
  },
};
