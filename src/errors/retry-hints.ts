/**
 * What an error says about repeating the call that failed. The harness's retry policy reads these three fields from
 * any thrown value, whatever its class (a duck-typed protocol, so that an HTTP client's own error can speak it), and
 * idemkey's errors implement it where they know the answer.
 */
export interface RetryHints {
  /**
   * Whether another attempt with the same key may succeed. `false` stops retries at once; `true` retries even what
   * the default policy would not. Absent, the policy decides.
   */
  readonly retryable?: boolean | undefined;
  /** How long the owner asked to wait before the next attempt (its `Retry-After`), in milliseconds. */
  readonly retryAfterMs?: number | undefined;
  /**
   * The attempt certainly had no effect: nothing was sent, or the owner answered that it did nothing. Only such a
   * failure may be retried for an `unguarded` tool.
   */
  readonly noEffect?: boolean | undefined;
}

/**
 * The hints a thrown value gives, each kept only when it has the right type (a `retryable: "yes"` is no hint), so
 * that what reaches the retry policy is what `RetryHints` promises.
 */
export function retryHints(error: unknown): RetryHints {
  if (typeof error !== "object" || error === null) return {};
  const { retryable, retryAfterMs, noEffect } = error as Record<string, unknown>;
  const hints: { retryable?: boolean; retryAfterMs?: number; noEffect?: boolean } = {};
  if (typeof retryable === "boolean") hints.retryable = retryable;
  if (typeof retryAfterMs === "number" && retryAfterMs >= 0) hints.retryAfterMs = retryAfterMs;
  if (typeof noEffect === "boolean") hints.noEffect = noEffect;
  return hints;
}
