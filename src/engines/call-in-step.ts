import { ApprovalDeniedError } from "../errors/approval-denied-error.js";
import { OutcomeUnknownError } from "../errors/outcome-unknown-error.js";
import { isTool } from "../harness/define-tool.js";
import type { Harness, Tool } from "../harness/types.js";

/**
 * What a durable engine keeps stable for one step across its retries, replays and worker restarts: the task (a
 * workflow id, never a run id that changes on retry) and the step's id or position within it (never the engine's
 * attempt counter). The key is `idempotencyKey(taskId, tool.name, args, { step })`.
 */
export interface StepIdentity {
  readonly taskId: string;
  readonly step: string | number;
}

/** What `callInStep` needs from an adapter: the step's identity and how its engine spells "do not retry". */
export interface StepCall {
  identity: StepIdentity;
  signal?: AbortSignal | undefined;
  /**
   * Turns a failure no retry can fix (`OutcomeUnknownError`, `ApprovalDeniedError`) into what the engine treats as
   * final, carrying the original as `cause`. Other failures reach the engine unchanged, so that it retries them.
   */
  final: (error: OutcomeUnknownError | ApprovalDeniedError) => unknown;
}

/** Runs `tool` through the harness under the step's key; the one place every engine adapter calls the harness. */
export async function callInStep<A, R>(
  harness: Harness,
  tool: Tool<A, R>,
  args: A,
  step: StepCall,
): Promise<R> {
  const { identity, signal } = step;
  try {
    return await harness.call(
      identity.taskId,
      tool,
      args,
      signal ? { step: identity.step, signal } : { step: identity.step },
    );
  } catch (error) {
    if (noRetryCanFix(error)) throw step.final(error);
    throw error;
  }
}

export function checkHarness(harness: unknown): asserts harness is Harness {
  if (typeof harness !== "object" || harness === null || typeof (harness as Harness).call !== "function") {
    throw new TypeError("harness must be a harness made by createHarness()");
  }
}

/** Not an assertion: `isTool` would narrow the caller's typed tool to `Tool<unknown, unknown>`. */
export function checkTool(tool: unknown): void {
  if (!isTool(tool)) throw new TypeError("tool must be a tool made by defineTool()");
}

/**
 * Whether `error` is one no retry of the step can fix: `OutcomeUnknownError` or `ApprovalDeniedError`. By name as
 * well as by class, so that one from another copy of idemkey (another realm, an engine's bundle) is recognised.
 */
export function noRetryCanFix(error: unknown): error is OutcomeUnknownError | ApprovalDeniedError {
  if (error instanceof OutcomeUnknownError || error instanceof ApprovalDeniedError) return true;
  const name = (error as { name?: unknown } | null)?.name;
  return (
    (name === "OutcomeUnknownError" || name === "ApprovalDeniedError") &&
    (error as { retryable?: unknown }).retryable === false
  );
}
