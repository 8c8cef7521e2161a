import { reporter } from "../options/report.js";
import type { Resolved } from "./options.js";
import type { LedgerCall } from "./record/types.js";
import { defaultRetryable, retryDelay } from "./retry.js";
import type { HarnessEvent, Tool, ToolContext } from "./types.js";

/** The harness's resolved options plus what every call shares. */
export interface Core extends Resolved {
  /** Given to tools as `ctx.signal` when the caller passed none. */
  never: AbortSignal;
}

/** One `harness.call`, resolved once: everything the ledger logic needs to know about it. */
export interface Call<A, R> {
  core: Core;
  tool: Tool<A, R>;
  taskId: string;
  key: string;
  /** The store key: the idempotency key under the ledger's prefix. */
  sk: string;
  args: A;
  argsHash: string;
  /** What a record this call creates carries. */
  data: LedgerCall;
  signal: AbortSignal | undefined;
  startedAt: number;
  /** Set when the call is answered from the ledger rather than by running the tool: `CallOutcome.replayed`. */
  replayed: boolean;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type EventInput = DistributiveOmit<HarnessEvent, "key" | "taskId" | "tool" | "durationMs">;

export function emit<A, R>(call: Call<A, R>, input: EventInput): void {
  const onEvent = call.core.onEvent;
  if (onEvent === undefined) return;
  const event = {
    key: call.key,
    taskId: call.taskId,
    tool: call.tool.name,
    durationMs: call.core.clock() - call.startedAt,
    ...input,
  } as HarnessEvent;
  notify(onEvent, event);
}

export function notify(onEvent: (event: HarnessEvent) => void, event: HarnessEvent): void {
  // The harness throws its failures to the caller; only a throwing onEvent goes the way of every module's hooks.
  reporter(onEvent, "onEvent", (e) => `a "${e.type}" event`)(event);
}

export function toolContext<A, R>(call: Call<A, R>, attempt: number): ToolContext {
  return {
    idempotencyKey: call.key,
    taskId: call.taskId,
    tool: call.tool.name,
    attempt,
    signal: attemptSignal(call),
  };
}

function attemptSignal<A, R>(call: Call<A, R>): AbortSignal {
  const base = call.signal ?? call.core.never;
  const ms = call.tool.timeoutMs;
  return ms === undefined ? base : AbortSignal.any([base, AbortSignal.timeout(ms)]);
}

/**
 * Whether attempt number `attempt` (the `failures`-th failure within this `harness.call`) is retried, and after how
 * long: the delay in milliseconds, or `undefined` for a final failure.
 */
export async function planRetry<A, R>(
  call: Call<A, R>,
  attempt: number,
  failures: number,
  error: unknown,
): Promise<number | undefined> {
  const { retry } = call.core;
  if (failures > retry.retries || call.signal?.aborted) return undefined;
  let yes: boolean | undefined;
  if (retry.shouldRetry) {
    yes = await retry.shouldRetry(
      Object.freeze({ key: call.key, taskId: call.taskId, tool: call.tool.name, attempt, error }),
    );
  }
  if (yes === undefined) yes = defaultRetryable(error, call.signal);
  return yes ? retryDelay(retry, failures, error, Math.random) : undefined;
}

/** Waits for `promise`, or rejects with the signal's reason as soon as it aborts (the promise runs on). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** A short, storable description of what was thrown, for the audit trail. */
export function describeError(error: unknown): string {
  const text =
    error instanceof Error
      ? `${error.name}: ${error.message}`
      : typeof error === "string"
        ? error
        : String(error);
  return text.length > 500 ? `${text.slice(0, 497)}...` : text;
}
