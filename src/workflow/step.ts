import {
  callInStep,
  checkHarness,
  checkTool,
  messageWithKey,
  type StepIdentity,
} from "../engines/call-in-step.js";
import type { Harness, Tool } from "../harness/types.js";
import { importPeer } from "../peer/import-peer.js";

const { FatalError, getStepMetadata, getWorkflowMetadata } = await importPeer(
  "idemkey/workflow",
  "workflow",
  () => import("workflow"),
);

/**
 * The identity of the `"use step"` function running now: the run's id (`getWorkflowMetadata().workflowRunId`,
 * which the run keeps through every retry of its steps and every replay of the workflow function) and the step's
 * id (`getStepMetadata().stepId`, the same on each retry of that step). Never `attempt`. Throws a `TypeError`
 * outside a step.
 */
export function stepIdentity(): StepIdentity {
  try {
    const { workflowRunId } = getWorkflowMetadata();
    const { stepId } = getStepMetadata();
    if (typeof workflowRunId === "string" && typeof stepId === "string" && stepId.length > 0) {
      return { taskId: workflowRunId, step: stepId };
    }
  } catch (error) {
    throw new TypeError('idemkey/workflow: callTool must run inside a "use step" function', { cause: error });
  }
  throw new TypeError('idemkey/workflow: callTool must run inside a "use step" function');
}

/**
 * Calls `tool` through the harness from inside a `"use step"` function, keyed by the run id and the step id: every
 * attempt the Workflow runtime makes of the step forwards the same `ctx.idempotencyKey`. A failure no retry can fix
 * (an `unguarded` tool that may have taken effect, a result JSON cannot hold, a denied approval, a `TypeError`, any
 * error that says `retryable: false`) fails the step with a `FatalError` (no retry) whose message names the key
 * and whose `cause`, `idemkeyError` and `idemkeyKey` (in the step's process) are the original error, its name and
 * the key.
 *
 * @example
 * async function chargeCard(order: { id: string; cents: number }) {
 *   "use step";
 *   return callTool(harness, chargeTool, order);
 * }
 */
export async function callTool<A, R>(harness: Harness, tool: Tool<A, R>, args: A): Promise<R> {
  checkHarness(harness);
  checkTool(tool);
  const identity = stepIdentity();
  return callInStep(harness, tool, args, {
    identity,
    // FatalError takes only a message; the cause is kept for the step's own process.
    final: (failure) =>
      Object.assign(new FatalError(messageWithKey(failure)), {
        cause: failure.error,
        idemkeyError: failure.name,
        idemkeyKey: failure.key,
      }),
  });
}
