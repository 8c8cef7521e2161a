import { isFetchNetworkFailure } from "../errors/fetch-failure.js";
import { isCanonicalizationError, isIdempotencyConflictError } from "../errors/guards.js";
import { retryHints } from "../errors/retry-hints.js";
import { numberOption } from "../options/number-option.js";

/** What `shouldRetry` is shown about a failed attempt. */
export interface RetryContext {
  readonly key: string;
  readonly taskId: string;
  readonly tool: string;
  /** The attempt that failed, counted as `ctx.attempt` is. */
  readonly attempt: number;
  readonly error: unknown;
}

export interface RetryOptions {
  /**
   * How many times a failed attempt is retried within one `harness.call`, always with the same key. 0 disables
   * retries.
   * @default 3
   */
  retries?: number;
  /** The delay before the first retry, in milliseconds. @default 500 */
  minDelayMs?: number;
  /** The longest delay between attempts, also the cap on an error's `retryAfterMs`. @default 30000 */
  maxDelayMs?: number;
  /** Each retry waits this many times longer than the one before. @default 2 */
  factor?: number;
  /**
   * Waits a random time between half and all of the computed delay, so that callers failing together do not retry
   * together. Not applied to an error's `retryAfterMs`, which is what the owner asked for.
   * @default true
   */
  jitter?: boolean;
  /**
   * Decides whether a failed attempt is retried; return `undefined` to keep the default decision, which retries
   * unless the error says `retryable: false`, is a `TypeError` (not `fetch`'s network failure), a
   * `CanonicalizationError` or an `IdempotencyConflictError`, or the call's signal aborted. Never asked once the
   * retries are used up, once the signal aborted, or for an `unguarded` failure that may have reached the owner.
   */
  shouldRetry?: (context: RetryContext) => boolean | undefined | Promise<boolean | undefined>;
}

export interface ResolvedRetry {
  retries: number;
  minDelayMs: number;
  maxDelayMs: number;
  factor: number;
  jitter: boolean;
  shouldRetry: RetryOptions["shouldRetry"];
}

export function resolveRetry(options: RetryOptions | undefined): ResolvedRetry {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new TypeError(`options.retry must be an object, got ${options === null ? "null" : typeof options}`);
  }
  const o = options ?? {};
  const retry: ResolvedRetry = {
    retries: nonNegative("retries", o.retries, 3, true),
    minDelayMs: nonNegative("minDelayMs", o.minDelayMs, 500, false),
    maxDelayMs: nonNegative("maxDelayMs", o.maxDelayMs, 30_000, false),
    factor: nonNegative("factor", o.factor, 2, false),
    jitter: o.jitter ?? true,
    shouldRetry: o.shouldRetry,
  };
  if (typeof retry.jitter !== "boolean") {
    throw new TypeError(`options.retry.jitter must be a boolean, got ${typeof retry.jitter}`);
  }
  if (retry.factor < 1) throw new TypeError(`options.retry.factor must be >= 1, got ${retry.factor}`);
  if (retry.maxDelayMs < retry.minDelayMs) {
    throw new TypeError(
      `options.retry.maxDelayMs (${retry.maxDelayMs}) must not be less than options.retry.minDelayMs (${retry.minDelayMs})`,
    );
  }
  if (retry.shouldRetry !== undefined && typeof retry.shouldRetry !== "function") {
    throw new TypeError(`options.retry.shouldRetry must be a function, got ${typeof retry.shouldRetry}`);
  }
  return retry;
}

const nonNegative = (name: string, value: unknown, fallback: number, integer: boolean) =>
  numberOption(`options.retry.${name}`, value, fallback, { integer, infinite: true });

/** A classifier a tool declares: whether a failure certainly had no effect; `undefined` when it cannot tell. */
export type NoEffect = (error: unknown) => boolean | undefined;

/**
 * The one rule (docs/integration-contract.md): a failure had no effect only when someone who knows says so, the
 * error itself (`noEffect: true`, set by the tool or from an owner's answer) or the classifier the tool declared.
 * A classifier that throws says nothing, so the outcome stays unknown.
 */
export function hadNoEffect(error: unknown, classify?: NoEffect): boolean {
  if (retryHints(error).noEffect === true) return true;
  if (classify === undefined) return false;
  try {
    return classify(error) === true;
  } catch {
    return false;
  }
}

export function defaultRetryable(error: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted) return false;
  return !isFinal(error);
}

/**
 * Whether no retry of the same call can fix `error`: it says `retryable: false` (`OutcomeUnknownError`,
 * `ApprovalDeniedError`, `ErrorAnswer` and every other idemkey error that knows), or it is a `TypeError` (other
 * than `fetch`'s network failure), a `CanonicalizationError` or an `IdempotencyConflictError` without
 * `retryable: true`. The harness stops retrying on it, and a durable engine must too: `callInStep` hands it over as
 * the engine's non-retryable failure.
 */
export function isFinal(error: unknown): boolean {
  const { retryable } = retryHints(error);
  if (retryable !== undefined) return !retryable;
  // A TypeError is a bug in the call (or bad arguments): the same key and arguments fail the same way again. The
  // guards, not instanceof, so that an error from another copy of idemkey (or another realm) is judged the same.
  return (
    (error instanceof TypeError && !isFetchNetworkFailure(error)) ||
    isCanonicalizationError(error) ||
    isIdempotencyConflictError(error)
  );
}

/** The wait before the retry that follows failed attempt number `failures` (1 for the first failure). */
export function retryDelay(
  retry: ResolvedRetry,
  failures: number,
  error: unknown,
  random: () => number,
): number {
  const after = retryHints(error).retryAfterMs;
  if (after !== undefined) return Math.min(after, retry.maxDelayMs);
  const delay = Math.min(retry.maxDelayMs, retry.minDelayMs * retry.factor ** (failures - 1));
  return retry.jitter ? delay * (0.5 + random() / 2) : delay;
}
