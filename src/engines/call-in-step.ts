import { isTool } from "../harness/define-tool.js";
import { isFinal } from "../harness/retry.js";
import type { Harness, Tool } from "../harness/types.js";

/**
 * What a durable engine keeps stable for one step across its retries, replays and worker restarts, and changes for
 * a new run: the task (the run: a Temporal workflow run, a DBOS workflow, a Restate invocation, an Inngest event, a
 * Workflow DevKit run) and the step's id or position within it (never the engine's attempt counter). The key is
 * `idempotencyKey(taskId, tool.name, args, { step })`.
 */
export interface StepIdentity {
  readonly taskId: string;
  readonly step: string | number;
}

/**
 * A failure no retry of the step can fix (`isFinal` in src/harness/retry.ts), as `callInStep` hands it to an
 * adapter's `final`.
 */
export interface FinalFailure {
  /** What the harness threw; the engine's failure keeps it as its `cause`. */
  readonly error: unknown;
  /** The error's `name` ("CanonicalizationError", "OutcomeUnknownError", ...), or "Error". */
  readonly name: string;
  readonly message: string;
  /**
   * The step's key, for `harness.get`, `harness.resolve` and the inspector: the error's own `key` when it has one,
   * else the key the step was called under; `undefined` when the arguments cannot be keyed.
   */
  readonly key: string | undefined;
}

/**
 * The failure's message, naming its key when it does not already: for an engine that keeps only an error's
 * message (Inngest and the Workflow DevKit serialize the name, message, stack and cause), so that whoever reads
 * the failed run finds the record to resolve.
 */
export function messageWithKey(failure: FinalFailure): string {
  const { message, key } = failure;
  return key === undefined || message.includes(key) ? message : `${message} (idemkey key ${key})`;
}

/** What `callInStep` needs from an adapter: the step's identity and how its engine spells "do not retry". */
export interface StepCall {
  identity: StepIdentity;
  signal?: AbortSignal | undefined;
  /**
   * Turns a final failure into the engine's non-retryable one, carrying the original as `cause` and the key. Every
   * other failure reaches the engine unchanged, so that it retries it under the same key.
   */
  final: (failure: FinalFailure) => unknown;
}

/**
 * Runs `tool` through the harness under the step's key; the one place every engine adapter calls the harness, and
 * the one mapping of what is final (docs/integration-contract.md, section 3).
 */
export async function callInStep<A, R>(
  harness: Harness,
  tool: Tool<A, R>,
  args: A,
  step: StepCall,
): Promise<R> {
  const { identity, signal } = step;
  const options = signal ? { step: identity.step, signal } : { step: identity.step };
  try {
    return await harness.call(identity.taskId, tool, args, options);
  } catch (error) {
    if (isFinal(error)) throw step.final(finalFailure(harness, tool, args, identity, error));
    throw error;
  }
}

function finalFailure<A, R>(
  harness: Harness,
  tool: Tool<A, R>,
  args: A,
  identity: StepIdentity,
  error: unknown,
): FinalFailure {
  const { name, message, key } = (typeof error === "object" && error !== null ? error : {}) as Record<
    string,
    unknown
  >;
  return {
    error,
    name: typeof name === "string" && name.length > 0 ? name : "Error",
    message: typeof message === "string" ? message : String(error),
    key: typeof key === "string" ? key : stepKey(harness, tool, args, identity),
  };
}

function stepKey<A, R>(harness: Harness, tool: Tool<A, R>, args: A, identity: StepIdentity) {
  if (typeof harness.key !== "function") return undefined;
  try {
    return harness.key(identity.taskId, tool, args, { step: identity.step });
  } catch {
    // Arguments JSON cannot hold: the call never had a key, which is also why it failed.
    return undefined;
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
