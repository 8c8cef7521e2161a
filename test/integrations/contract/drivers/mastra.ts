import { Mastra } from "@mastra/core/mastra";
import { InMemoryStore } from "@mastra/core/storage";
import { createTool } from "@mastra/core/tools";
import { createStep, createWorkflow } from "@mastra/core/workflows";
import { z } from "zod";
import { type ApprovalRequest, idemkeyContext, idempotentMastraTool } from "../../../../src/mastra/index.js";
import type { Driver } from "../driver.js";
import { type Seen, textOf, type World } from "../world.js";

/**
 * `idempotentMastraTool` as a step of a Mastra workflow (`createStep(tool)`), run with `createRun({ runId })`: the run
 * id is the task, so a second instance starting the same run id is the replay. Imported only on Node >= 22.13.
 */
export const mastraDriver: Driver = {
  name: "idempotentMastraTool (Mastra workflow)",
  notModelFacing:
    "a workflow step's output feeds the next step, not a model (an agent's model reads the texts through " +
    "toModelOutput: test/integrations/mastra-contract.test.ts)",
  async open(world) {
    const mastra = refundMastra(world, false);
    return {
      async call(args, options) {
        const run = await mastra.getWorkflow("refunds").createRun({ runId: world.taskId });
        if (options?.signal)
          options.signal.addEventListener("abort", () => void run.cancel(), { once: true });
        return seenOf(await run.start({ inputData: args as never }));
      },
    };
  },
  // `requireApproval` on the tool: the step suspends with the key, and `run.resume({ resumeData })` decides.
  async askApproval(world, args) {
    const run = await refundMastra(world, true).getWorkflow("refunds").createRun({ runId: world.taskId });
    const started = await run.start({ inputData: args as never });
    const steps = (started as { steps?: Record<string, { suspendPayload?: ApprovalRequest }> }).steps;
    const request = started.status === "suspended" ? steps?.[world.spec.name]?.suspendPayload : undefined;
    if (request === undefined) return seenOf(started);
    return {
      key: request.key,
      async decide(decision) {
        const resumeData = decision.approve
          ? { key: request.key, approve: true }
          : { key: request.key, approve: false, reason: decision.reason };
        return seenOf(await run.resume({ step: world.spec.name, resumeData }));
      },
    };
  },
};

/** A new process's Mastra: one workflow whose one step is the spec's tool, wrapped by `idempotentMastraTool`. */
function refundMastra(world: World, requireApproval: boolean): Mastra {
  const { name, effect, noEffect } = world.spec;
  const refund = idempotentMastraTool(
    world.harness(),
    createTool({
      id: name,
      description: "Refund a payment.",
      inputSchema: world.schema(),
      // Mastra makes a step of a tool only with both schemas; the owner's answer is checked by the table, not here.
      outputSchema: z.any(),
      requireApproval,
      execute: async () => world.owner.act(idemkeyContext()?.idempotencyKey),
    }),
    { effect, noEffect },
  );
  const step = createStep(refund);
  const workflow = createWorkflow({
    id: "refunds",
    // The workflow passes its input on as the application gave it; the tool's own schema is the one under test (a
    // workflow schema that generated a field would draw it before any step, where no adapter can see it).
    inputSchema: z.object({}).passthrough(),
    outputSchema: step.outputSchema,
  })
    .then(step)
    .commit();
  return new Mastra({ workflows: { refunds: workflow }, storage: new InMemoryStore(), logger: false });
}

/** What the application's code gets of a workflow run: its result, or its error. */
function seenOf(result: { status: string; result?: unknown }): Seen {
  if (result.status === "success") return { text: textOf(result.result) };
  const error = "error" in result ? result.error : result;
  return { text: textOf(error instanceof Error ? `${error.name}: ${error.message}` : error), error };
}
