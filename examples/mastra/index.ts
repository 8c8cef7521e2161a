/**
 * idemkey with Mastra, offline (no model): a workflow step makes a refund, then suspends to ask whether to close the
 * ticket. Mastra runs a resumed step again from its start, so the refund is asked for again. With the tool wrapped,
 * the run id keys the call, and one refund is made. Needs Node >= 22.13, as @mastra/core does.
 *
 * Run: npm run example:mastra
 */
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 13)) {
  console.error(`@mastra/core needs Node >= 22.13; this is ${process.versions.node}.`);
  process.exit(2);
}
const { Mastra } = await import("@mastra/core/mastra");
const { InMemoryStore } = await import("@mastra/core/storage");
const { createTool } = await import("@mastra/core/tools");
const { createStep, createWorkflow } = await import("@mastra/core/workflows");
const { z } = await import("zod");
// In an application: from "idemkey" and "idemkey/mastra".
const { createHarness } = await import("../../src/index.js");
const { idemkeyContext, idempotentMastraTool } = await import("../../src/mastra/index.js");

const refunds: { paymentId: string; key: string | undefined }[] = [];
const harness = createHarness({ onEvent: (e) => console.log(`  harness: ${e.type} ${e.tool}`) });
const Refund = z.object({ paymentId: z.string(), cents: z.number() });

const refund = idempotentMastraTool(
  harness,
  createTool({
    id: "refund",
    description: "Refund a payment.",
    inputSchema: Refund,
    outputSchema: z.object({ refund: z.string() }),
    execute: async ({ paymentId }) => {
      // A real payments API would take the key as its idempotency key.
      refunds.push({ paymentId, key: idemkeyContext()?.idempotencyKey });
      return { refund: `refund-${refunds.length}` };
    },
  }),
  { effect: "keyed" },
);

const pay = createStep({
  id: "pay",
  inputSchema: Refund,
  outputSchema: z.object({ refund: z.string(), close: z.boolean() }),
  resumeSchema: z.object({ close: z.boolean() }),
  execute: async ({ inputData, resumeData, suspend, runId, workflowId }) => {
    const made = (await refund.execute!(inputData, { workflow: { runId, workflowId } } as never)) as {
      refund: string;
    };
    if (resumeData === undefined) return suspend({ ask: `Refund ${made.refund} made. Close the ticket?` });
    return { refund: made.refund, close: resumeData.close };
  },
});
const workflow = createWorkflow({ id: "refunds", inputSchema: Refund, outputSchema: pay.outputSchema })
  .then(pay)
  .commit();
const mastra = new Mastra({ workflows: { refunds: workflow }, storage: new InMemoryStore(), logger: false });

const run = await mastra.getWorkflow("refunds").createRun();
console.log("Start: the step refunds, then suspends.");
console.log(`  ${(await run.start({ inputData: { paymentId: "pay_881", cents: 4_999 } })).status}`);
console.log("Resume: the step runs again from its start.");
const done = await run.resume({ step: "pay", resumeData: { close: true } });
console.log(`  ${done.status}: ${JSON.stringify(done.status === "success" ? done.result : undefined)}`);

console.log(`Refunds made: ${refunds.length}`);
if (refunds.length !== 1) process.exitCode = 1;
