import type { StepConfig } from "@dbos-inc/dbos-sdk";
import { callInStep, checkHarness, checkTool, type StepIdentity } from "../engines/call-in-step.js";
import { isFinal } from "../harness/retry.js";
import type { Harness, Tool } from "../harness/types.js";
import { importPeer } from "../peer/import-peer.js";

const { DBOS } = await importPeer("idemkey/dbos", "@dbos-inc/dbos-sdk", () => import("@dbos-inc/dbos-sdk"));

/**
 * The identity of the DBOS step running now: the workflow id (which a recovery, a fork's original steps and
 * `DBOS.resumeWorkflow` keep) and the step id (the step's position in the workflow, which DBOS itself relies on
 * being the same on every execution). Throws a `TypeError` outside a step.
 */
export function stepIdentity(): StepIdentity {
  const taskId = DBOS.workflowID;
  const step = DBOS.stepID;
  if (!DBOS.isInStep() || taskId === undefined || step === undefined) {
    throw new TypeError(
      "idemkey/dbos: callTool must run inside a DBOS step (DBOS.runStep or a registered step)",
    );
  }
  return { taskId, step };
}

/**
 * Calls `tool` through the harness from inside a DBOS step (a `DBOS.registerStep` function or a `DBOS.runStep`
 * callback), keyed by the workflow id and the step id: every attempt DBOS makes of this step, in this process or
 * after a recovery, gets the same `ctx.idempotencyKey`. A failure no retry can fix (an `unguarded` tool that may
 * have taken effect, a result JSON cannot hold, a denied approval, a `TypeError`, any error that says
 * `retryable: false`) is thrown as it is, carrying its key where it has one; give the step
 * `shouldRetry: retryUnlessFinal()` so that DBOS stops retrying it (`runStep` below does).
 */
export async function callTool<A, R>(harness: Harness, tool: Tool<A, R>, args: A): Promise<R> {
  checkHarness(harness);
  checkTool(tool);
  const identity = stepIdentity();
  return callInStep(harness, tool, args, {
    identity,
    signal: DBOS.stepStatus?.timeoutSignal,
    // DBOS has no non-retryable error class: the step's shouldRetry (retryUnlessFinal) is what stops it, so the
    // original goes on as it is, and it is what the workflow's caller catches.
    final: (failure) => failure.error,
  });
}

/**
 * A `shouldRetry` for a DBOS step that calls tools: no retry after a failure no retry can fix (`isFinal`: an
 * unknown outcome, a result JSON cannot hold, a denied approval, a `TypeError`, any error that says
 * `retryable: false`), which would take effect twice or fail the same way again; otherwise `shouldRetry` decides.
 * @default retries every other error, as DBOS does
 */
export function retryUnlessFinal(
  shouldRetry?: StepConfig["shouldRetry"],
): (error: unknown) => boolean | Promise<boolean> {
  if (shouldRetry !== undefined && typeof shouldRetry !== "function") {
    throw new TypeError("shouldRetry must be a function");
  }
  return (error) => {
    if (isFinal(error)) return false;
    return shouldRetry === undefined ? true : shouldRetry(error);
  };
}

/**
 * @deprecated Use `retryUnlessFinal`, the same function under the name of what it does: it stops on every final
 * failure, not only an unknown outcome.
 */
export const retryUnlessOutcomeUnknown = retryUnlessFinal;

/**
 * `DBOS.runStep` around `callTool`: one checkpointed step, named after the tool unless `config.name` says
 * otherwise, retried by DBOS as `config` asks except after a final failure.
 * @example
 * const receipt = await runStep(harness, chargeCard, { order: 42, cents: 1999 }, { retriesAllowed: true });
 */
export function runStep<A, R>(
  harness: Harness,
  tool: Tool<A, R>,
  args: A,
  config: StepConfig = {},
): Promise<R> {
  checkHarness(harness);
  checkTool(tool);
  if (typeof config !== "object" || config === null) throw new TypeError("config must be an object");
  return DBOS.runStep(() => callTool(harness, tool, args), {
    name: tool.name,
    ...config,
    shouldRetry: retryUnlessFinal(config.shouldRetry),
  });
}
