import { IdemkeyError } from "./idemkey-error.js";

/**
 * The key was already used for a different request or call (other arguments, another body). Retrying with the
 * same key can never succeed: derive the key from the arguments that are really meant, or use a new key.
 */
export class IdempotencyConflictError extends IdemkeyError {
  override name = "IdempotencyConflictError" as const;
  /** The key that was reused. */
  readonly key: string;
  /** Never worth retrying with the same key; read by the harness's default retry policy. */
  readonly retryable = false;

  constructor(key: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.key = key;
  }
}
