/**
 * idemkey with LangGraph, offline (no model): a node makes a refund, then asks a person with `interrupt()`. LangGraph
 * runs a resumed node again from its start, so the refund is asked for again on the resume, and again when the resume
 * is retried from the same checkpoint. With the tool wrapped, the thread id keys the call, and one refund is made.
 *
 * Run: npm run example:langgraph
 */
import { tool } from "@langchain/core/tools";
import { Annotation, Command, END, interrupt, MemorySaver, START, StateGraph } from "@langchain/langgraph";
import { z } from "zod";
// In an application: from "idemkey" and "idemkey/langgraph".
import { createHarness } from "../../src/index.js";
import { idemkeyContext, idempotentTool } from "../../src/langgraph/index.js";

const refunds: { paymentId: string; key: string | undefined }[] = [];
const harness = createHarness({ onEvent: (e) => console.log(`  harness: ${e.type} ${e.tool}`) });

const refund = idempotentTool(
  harness,
  tool(
    async ({ paymentId }: { paymentId: string; cents: number }) => {
      // A real payments API would take the key as its idempotency key.
      refunds.push({ paymentId, key: idemkeyContext()?.idempotencyKey });
      return `refund-${refunds.length}`;
    },
    {
      name: "refund",
      description: "Refund a payment.",
      schema: z.object({ paymentId: z.string(), cents: z.number() }),
    },
  ),
  { effect: "keyed" },
);

const State = Annotation.Root({ refund: Annotation<string>(), close: Annotation<string>() });
const graph = new StateGraph(State)
  .addNode("pay", async (_state, config) => {
    const id = String(await refund.invoke({ paymentId: "pay_881", cents: 4_999 }, config));
    const close = interrupt<string, string>(`Refund ${id} made. Close the ticket?`);
    return { refund: id, close };
  })
  .addEdge(START, "pay")
  .addEdge("pay", END)
  .compile({ checkpointer: new MemorySaver() });

const config = { configurable: { thread_id: "ticket-T-1" } };
console.log("Run: the node refunds, then interrupts.");
await graph.invoke({}, config);
const interrupted = await graph.getState(config);
console.log("Resume: the node runs again from its start.");
console.log(`  ${JSON.stringify(await graph.invoke(new Command({ resume: "yes" }), config))}`);
console.log("Resume again from the interrupted checkpoint (the first resume's answer was lost).");
console.log(`  ${JSON.stringify(await graph.invoke(new Command({ resume: "yes" }), interrupted.config))}`);

console.log(`Refunds made: ${refunds.length}`);
if (refunds.length !== 1) process.exitCode = 1;
