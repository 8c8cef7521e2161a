import type { Store } from "../store/types.js";

/**
 * `value` when it has each of `methods`, else a `TypeError` naming the first it lacks. Each part checks only the
 * methods it calls, so that a store made for one part (a ledger over RPC, an owner's table) is not refused by another.
 */
export function checkStore(value: unknown, methods: readonly (keyof Store)[]): Store {
  const store = value as Partial<Store> | undefined;
  for (const method of methods) {
    if (typeof store?.[method] !== "function") {
      throw new TypeError(`options.store must implement the Store contract; it has no ${method}() method`);
    }
  }
  return value as Store;
}
