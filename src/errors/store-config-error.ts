import { IdemkeyError } from "./idemkey-error.js";

/**
 * A store is configured in a way its server can never serve, found when the server said so (a Redis Cluster
 * answering `CROSSSLOT` to a prefix without a hash tag). Calling again cannot help: change the named option.
 * `cause` is the server's error.
 */
export class StoreConfigError extends IdemkeyError {
  override name = "StoreConfigError" as const;
  /** The engine: `"redis"`. */
  readonly store: string;
  /** The store option to change, such as `"prefix"`. */
  readonly option: string;
  /** Calling again fails the same way until the option changes. */
  readonly retryable = false;

  constructor(store: string, option: string, message: string, options?: ErrorOptions) {
    super(`${store} store: ${message}`, options);
    this.store = store;
    this.option = option;
  }
}
