import { AIMessage, type ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { Command, END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { type ApprovalRequest, idemkeyContext, idempotentTool } from "../../../../src/langgraph/index.js";
import type { Driver } from "../driver.js";
import type { Seen, World } from "../world.js";

/** The spec's tool, wrapped by `idempotentTool`, in a `ToolNode`. */
function refundNode(world: World, requiresApproval: boolean): ToolNode {
  const { name, effect, noEffect } = world.spec;
  const plain = tool(async () => world.owner.act(idemkeyContext()?.idempotencyKey), {
    name,
    description: "Refund a payment.",
    schema: world.schema(),
  });
  return new ToolNode([
    idempotentTool(world.harness(), plain, {
      effect,
      noEffect,
      requiresApproval,
      taskId: () => world.taskId,
    }),
  ]);
}

/** The model's tool call, as an `AIMessage` a graph hands its `ToolNode`. */
const callOf = (name: string, args: object) =>
  new AIMessage({ content: "", tool_calls: [{ name, args, id: "call_1", type: "tool_call" }] });

/** What the model reads of the `ToolNode`'s answer. */
function seenOf(answer: ToolMessage): Seen {
  const text = typeof answer.content === "string" ? answer.content : JSON.stringify(answer.content);
  return answer.status === "error" ? { text, error: answer } : { text };
}

/** `idempotentTool` (LangGraph) in a `ToolNode`, invoked with the model's tool call as a LangGraph graph does. */
export const langgraphDriver: Driver = {
  name: "idempotentTool (LangGraph ToolNode)",
  async open(world) {
    const node = refundNode(world, false);
    return {
      async call(args, options) {
        const out = (await node.invoke(
          { messages: [callOf(world.spec.name, args)] },
          options?.signal ? { signal: options.signal } : {},
        )) as { messages: ToolMessage[] };
        return seenOf(out.messages[0]!);
      },
    };
  },
  // `requiresApproval`: the graph stops with LangGraph's interrupt(), and `Command({ resume })` on its checkpointer
  // carries the decision, bound to the key the interrupt named.
  async askApproval(world, args) {
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("tools", refundNode(world, true))
      .addEdge(START, "tools")
      .addEdge("tools", END)
      .compile({ checkpointer: new MemorySaver() });
    const thread = { configurable: { thread_id: "thread-1" } };
    type Out = { messages: ToolMessage[]; __interrupt__?: { value: ApprovalRequest }[] };
    const answered = (out: Out): Seen => seenOf(out.messages.at(-1)!);
    const out = (await graph.invoke({ messages: [callOf(world.spec.name, args)] }, thread)) as Out;
    const request = out.__interrupt__?.[0]?.value;
    if (request === undefined) return answered(out);
    return {
      key: request.key,
      async decide(decision) {
        const resume = decision.approve
          ? { key: request.key, approve: true as const }
          : { key: request.key, approve: false as const, reason: decision.reason };
        return answered((await graph.invoke(new Command({ resume }), thread)) as Out);
      },
    };
  },
};
