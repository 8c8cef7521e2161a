import { IdemkeyError } from "./idemkey-error.js";

/**
 * An `unguarded` call may or may not have taken effect (it failed after it may have reached the owner, or its
 * process stopped while it was pending), and the harness will not repeat it on its own. Check the world, then
 * record what happened with `harness.resolve(key, { result })`, or clear it to run again with
 * `harness.resolve(key, { retry: true })`. `cause` is the failure that made the outcome unknown, when there was one.
 */
export class OutcomeUnknownError extends IdemkeyError {
  override name = "OutcomeUnknownError" as const;
  /** The idempotency key of the call, to pass to `harness.resolve`. */
  readonly key: string;
  /** Repeating the call cannot help until the outcome is resolved; read by the harness's default retry policy. */
  readonly retryable = false;

  constructor(key: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.key = key;
  }
}
