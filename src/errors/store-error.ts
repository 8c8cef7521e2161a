import { IdemkeyError } from "./idemkey-error.js";

/**
 * A store's server failed or could not be reached during an operation (a dropped connection, a timeout, a server
 * error). Whether a write was applied before the failure is unknown to this call, but every store operation is
 * conditional, so calling again is safe: it sees what was applied. `cause` is the driver's error.
 */
export class StoreError extends IdemkeyError {
  override name = "StoreError" as const;
  /** The engine: `"postgres"`, `"redis"`. */
  readonly store: string;
  /** The operation that failed: `claim`, `update`, `effectOnce`, ... */
  readonly operation: string;
  /** The key the operation was about, when there was one. */
  readonly key: string | undefined;
  /** Worth retrying once the server is reachable again. */
  readonly retryable = true;

  constructor(
    store: string,
    operation: string,
    key: string | undefined,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.store = store;
    this.operation = operation;
    this.key = key;
  }
}
