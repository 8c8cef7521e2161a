import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import type { RetryHints } from "./retry-hints.js";

/**
 * A person denied the call parked for approval under `key`. The denial is bound to that key: the same call is
 * denied again until its ledger record expires, and a call with other arguments asks for approval anew.
 */
export class ApprovalDeniedError extends IdemkeyError implements RetryHints {
  override name = "ApprovalDeniedError" as const;
  readonly key: string;
  /** Why, as given to `harness.deny`. */
  readonly reason: string;
  /** Who denied it, when `harness.deny` was told. */
  readonly by: string | undefined;
  readonly retryable = false;

  constructor(key: string, reason: string, by: string | undefined, options?: ErrorOptions) {
    super(`The call ${key} was denied${by === undefined ? "" : ` by ${by}`}: ${reason}`, options);
    this.key = key;
    this.reason = reason;
    this.by = by;
  }
}
brand(ApprovalDeniedError, "ApprovalDeniedError");
