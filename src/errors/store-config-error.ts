import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import type { RetryHints } from "./retry-hints.js";

/** What a `StoreConfigError` is made from: the store, the option at fault, its value and what the server said. */
export interface StoreConfigErrorData extends ErrorOptions {
  /** The engine: `"redis"`. */
  store: string;
  /** The store option to change, such as `"prefix"`. */
  option: string;
  /** The option's value. */
  value: unknown;
  /** The server's reply (its first line is shown). */
  reply: string;
  /** What the reply means, when the class knows it: a Redis Cluster's `CROSSSLOT`. */
  reason?: "cross-slot";
}

type Positional = [string, string, string, ErrorOptions?];

/**
 * A store is configured in a way its server can never serve, found when the server said so (a Redis Cluster
 * answering `CROSSSLOT` to a prefix without a hash tag). Calling again cannot help: change the named option.
 * `cause` is the server's error.
 */
export class StoreConfigError extends IdemkeyError implements RetryHints {
  override name = "StoreConfigError" as const;
  /** The engine: `"redis"`. */
  readonly store: string;
  /** The store option to change, such as `"prefix"`. */
  readonly option: string;
  /** Calling again fails the same way until the option changes. */
  readonly retryable = false;

  constructor(data: StoreConfigErrorData);
  /** @deprecated Pass one object, `new StoreConfigError({ store, option, value, reply })`. */
  constructor(store: string, option: string, message: string, options?: ErrorOptions);
  constructor(...args: [StoreConfigErrorData] | Positional) {
    const [first] = args;
    if (typeof first === "object") {
      super(`${first.store} store: ${compose(first)}`, "cause" in first ? { cause: first.cause } : undefined);
      this.store = first.store;
      this.option = first.option;
    } else {
      const [store, option, message, options] = args as Positional;
      super(`${store} store: ${message}`, options);
      this.store = store;
      this.option = option;
    }
  }
}
brand(StoreConfigError, "StoreConfigError");

function compose({ option, value, reply, reason }: StoreConfigErrorData): string {
  const said = reply.split("\n")[0];
  if (reason === "cross-slot") {
    return (
      `Redis refused the store's keys under ${option} ${JSON.stringify(value)} as spread over several slots ` +
      `(${said}): this is a Redis Cluster, so the ${option} needs a hash tag, a non-empty {...} part ` +
      `such as "{idemkey}:"; calling again cannot succeed`
    );
  }
  return `the server refused options.${option} ${JSON.stringify(value)} (${said}); change it: calling again cannot succeed`;
}
