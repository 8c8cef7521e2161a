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

export interface TemporalCallOptions {
  /**
   * The task of the key, from the activity's `Info`, for a grouping other than the run's: the activity id stays
   * the step. Return what stays the same for every execution that must share a key, and changes for each that must
   * not; activity ids restart at 1 in each run, so a task that spans runs must tell them apart itself.
   * @default (info) => `${info.workflowExecution.workflowId}/${info.workflowExecution.runId}`
   * @example
   * // A workflow retry or reset repeats no charge: the workflow passes the id of what it bills.
   * callTool(harness, chargeTool, order, { taskId: () => `invoice:${order.invoiceId}` })
   */
  taskId?: (info: Info) => string;
}

/**
 * The identity of the Temporal activity running now: the workflow id and run id, which every attempt of the
 * activity and every replay of the workflow on any worker keep, and which a new run changes (continue-as-new, each
 * cron run, a workflow id reused once the last run closed, a workflow retry, a reset), with the activity id (the
 * workflow's sequence number for it unless the workflow chose one; it restarts at 1 in each run). Never the
 * attempt. Throws a `TypeError` outside an activity, or in a standalone activity that has no workflow.
 */
export function activityIdentity(): StepIdentity {
  const info = currentInfo();
  const execution = info.workflowExecution;
  if (!nonEmpty(execution?.workflowId) || !nonEmpty(execution?.runId)) {
    throw new TypeError(
      "idemkey/temporal: this activity belongs to no workflow execution, so it has no run to key on; give options.taskId",
    );
  }
  return { taskId: `${execution.workflowId}/${execution.runId}`, step: info.activityId };
}

/**
 * Calls `tool` through the harness from inside a Temporal activity, keyed by the workflow run and the activity id:
 * every attempt the server schedules, on any worker, gets the same `ctx.idempotencyKey`, and each run of the
 * workflow gets its own; the activity's cancellation signal is the tool's `ctx.signal`. A failure no retry can fix
 * (an `unguarded` tool that may have taken effect, a result JSON cannot hold, a denied approval, a `TypeError`,
 * any error that says `retryable: false`) fails the activity with a non-retryable `ApplicationFailure` whose
 * `type` is the error's name, `details` `[{ key }]` and `cause` the error, so the server does not schedule another
 * attempt.
 *
 * @example
 * export async function chargeCard(order: { id: string; cents: number }) {
 *   return callTool(harness, chargeTool, order);
 * }
 */
export async function callTool<A, R>(
  harness: Harness,
  tool: Tool<A, R>,
  args: A,
  options: TemporalCallOptions = {},
): Promise<R> {
  checkHarness(harness);
  checkTool(tool);
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const { taskId } = options;
  if (taskId !== undefined && typeof taskId !== "function") {
    throw new TypeError("options.taskId must be a function of the activity Info");
  }
  const identity = taskId === undefined ? activityIdentity() : chosenIdentity(taskId);
  return callInStep(harness, tool, args, {
    identity,
    signal: Context.current().cancellationSignal,
    final: (failure) =>
      ApplicationFailure.create({
        message: failure.message,
        type: failure.name,
        nonRetryable: true,
        details: [{ key: failure.key }],
        cause: failure.error instanceof Error ? failure.error : undefined,
      }),
  });
}

function chosenIdentity(taskId: (info: Info) => string): StepIdentity {
  const info = currentInfo();
  const task = taskId(info);
  if (!nonEmpty(task)) {
    throw new TypeError(`options.taskId must return a non-empty string, got ${JSON.stringify(task)}`);
  }
  return { taskId: task, step: info.activityId };
}

function currentInfo(): Info {
  try {
    return Context.current().info;
  } catch (error) {
    throw new TypeError("idemkey/temporal: callTool must run inside a Temporal activity", { cause: error });
  }
}

const nonEmpty = (value: unknown): value is string => typeof value === "string" && value.length > 0;
