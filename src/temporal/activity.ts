import type { Info } from "@temporalio/activity";
import { callInStep, checkHarness, checkTool, type StepIdentity } from "../engines/call-in-step.js";
import type { Harness, Tool } from "../harness/types.js";
import { importPeer } from "../peer/import-peer.js";

const { Context } = await importPeer(
  "idemkey/temporal",
  "@temporalio/activity",
  () => import("@temporalio/activity"),
);
const { ApplicationFailure } = await importPeer(
  "idemkey/temporal",
  "@temporalio/common",
  () => import("@temporalio/common"),
);

/**
 * The identity of the Temporal activity running now: its workflow id (kept by every retry of the activity, by a
 * worker restart and by a retry or reset of the workflow, which all change the run id) and its activity id (the
 * workflow's sequence number for it unless the workflow chose one, the same on every replay). Never the run id or
 * the attempt. Throws a `TypeError` outside an activity, or in a standalone activity that has no workflow.
 */
export function activityIdentity(): StepIdentity {
  let info: Info;
  try {
    info = Context.current().info;
  } catch (error) {
    throw new TypeError("idemkey/temporal: callTool must run inside a Temporal activity", { cause: error });
  }
  const workflowId = info.workflowExecution?.workflowId;
  if (typeof workflowId !== "string" || workflowId.length === 0) {
    throw new TypeError(
      "idemkey/temporal: this activity belongs to no workflow execution, so it has no stable id to key on",
    );
  }
  return { taskId: workflowId, step: info.activityId };
}

/**
 * Calls `tool` through the harness from inside a Temporal activity, keyed by the workflow id and the activity id:
 * every attempt the server schedules, on any worker, gets the same `ctx.idempotencyKey`, and the activity's
 * cancellation signal is the tool's `ctx.signal`. An `unguarded` tool that may have taken effect fails the activity
 * with a non-retryable `ApplicationFailure` of type `"OutcomeUnknownError"` (details: `[{ key }]`, cause: the
 * `OutcomeUnknownError`), so the server does not schedule another attempt.
 *
 * @example
 * export async function chargeCard(order: { id: string; cents: number }) {
 *   return callTool(harness, chargeTool, order);
 * }
 */
export async function callTool<A, R>(harness: Harness, tool: Tool<A, R>, args: A): Promise<R> {
  checkHarness(harness);
  checkTool(tool);
  const identity = activityIdentity();
  return callInStep(harness, tool, args, {
    identity,
    signal: Context.current().cancellationSignal,
    final: (error) =>
      ApplicationFailure.create({
        message: error.message,
        type: error.name,
        nonRetryable: true,
        details: [{ key: error.key }],
        cause: error,
      }),
  });
}
