import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import type { RetryHints } from "./retry-hints.js";

export interface ToolCallErrorOptions extends ErrorOptions {
  /**
   * Whether another attempt with the same key may succeed. `false` stops the harness's retries at once; `true`
   * retries even an error the default policy would not (a `TypeError`, say). Left out, the harness's default policy
   * decides.
   */
  retryable?: boolean;
  /** How long the owner asked to wait before the next attempt (its `Retry-After`), in milliseconds. */
  retryAfterMs?: number;
  /**
   * The call certainly had no effect: it failed before anything was sent, or the owner answered definitively that
   * it did nothing. Only such a failure may be retried for an `unguarded` tool; any other failure of an `unguarded`
   * attempt ends in `OutcomeUnknownError`.
   * @default false
   */
  noEffect?: boolean;
}

/**
 * What a tool throws to tell the harness how its failure may be handled. The harness reads `retryable`,
 * `retryAfterMs` and `noEffect` from any thrown error, whatever its class, so an HTTP client can throw its own error
 * with the same fields; this class is the ready-made one.
 *
 * The one class of the family that takes its message as text: the message is the tool's own account of its
 * failure, which idemkey has no data to write for it.
 *
 * @example throw new ToolCallError("rate limited", { retryAfterMs: 2_000, noEffect: true, cause: response })
 */
export class ToolCallError extends IdemkeyError implements RetryHints {
  override name = "ToolCallError" as const;
  readonly retryable: boolean | undefined;
  readonly retryAfterMs: number | undefined;
  readonly noEffect: boolean;

  constructor(message: string, options: ToolCallErrorOptions = {}) {
    super(message, "cause" in options ? { cause: options.cause } : undefined);
    const { retryable, retryAfterMs, noEffect = false } = options;
    if (retryable !== undefined && typeof retryable !== "boolean") {
      throw new TypeError(`options.retryable must be a boolean, got ${typeof retryable}`);
    }
    if (retryAfterMs !== undefined && !(typeof retryAfterMs === "number" && retryAfterMs >= 0)) {
      throw new TypeError(`options.retryAfterMs must be a number >= 0, got ${String(retryAfterMs)}`);
    }
    if (typeof noEffect !== "boolean") {
      throw new TypeError(`options.noEffect must be a boolean, got ${typeof noEffect}`);
    }
    this.retryable = retryable;
    this.retryAfterMs = retryAfterMs;
    this.noEffect = noEffect;
  }
}
brand(ToolCallError, "ToolCallError");
