import { describe } from "../options/describe.js";
import type { Store } from "../store/types.js";

/** The store operations one object serves another over RPC; `close` stays with the object that owns the store. */
const METHODS = ["claim", "get", "update", "delete", "list", "changes", "purge"] as const;
export type StoreMethod = (typeof METHODS)[number];

/**
 * What `objectStore` calls on a Durable Object stub: one RPC method that runs a store operation inside the object.
 * Give a Durable Object class this method by returning `serveStore(store)`'s answer from it.
 */
export interface StoreObject {
  idemkeyStore(method: StoreMethod, args: unknown[]): Promise<unknown>;
}

/**
 * The object's side of `objectStore`: runs the operation a stub asked for on `store` (a `durableObjectStore` on the
 * object's own storage), so that every Worker and object that calls this object shares one ledger, decided in one
 * thread.
 *
 * @example
 * export class Ledger extends DurableObject {
 *   #serve = serveStore(durableObjectStore(this.ctx.storage));
 *   idemkeyStore(method: StoreMethod, args: unknown[]) {
 *     return this.#serve(method, args);
 *   }
 * }
 */
export function serveStore(store: Store): StoreObject["idemkeyStore"] {
  if (typeof store !== "object" || store === null || typeof store.claim !== "function") {
    throw new TypeError(`serveStore: store must be an idemkey store, got ${describe(store)}`);
  }
  return async (method, args) => {
    if (!(METHODS as readonly string[]).includes(method) || typeof store[method] !== "function") {
      throw new TypeError(`serveStore: the store has no ${String(method)}() to serve`);
    }
    if (!Array.isArray(args)) throw new TypeError("serveStore: args must be an array");
    return (store[method] as (...a: unknown[]) => Promise<unknown>)(...args);
  };
}

/**
 * A store that lives in another Durable Object (one that answers with `serveStore`), reached over RPC through its
 * stub: for a ledger that outlives the object calling it, such as an `McpAgent`, of which there is one per MCP
 * session, so that a client that reconnects with a new session still finds its keys. Each operation is one RPC
 * call, atomic in the ledger's object as `durableObjectStore` makes it; a call that fails on the way is an error of
 * the store, which the harness and `mcpDedupe` treat as such (never as "nothing happened"). `close` closes
 * nothing: the store belongs to the ledger's object.
 *
 * @example
 * const store = objectStore(env.LEDGER.get(env.LEDGER.idFromName(callerId)));
 */
export function objectStore(stub: StoreObject): Store {
  if (typeof stub !== "object" || stub === null || typeof stub.idemkeyStore !== "function") {
    // A stub answers every property name with something callable: this catches what is no stub at all.
    throw new TypeError(
      `objectStore: stub must be a Durable Object stub with idemkeyStore(), got ${describe(stub)}`,
    );
  }
  const call =
    <M extends StoreMethod>(method: M) =>
    (...args: unknown[]) =>
      stub.idemkeyStore(method, args) as ReturnType<NonNullable<Store[M]>>;
  return {
    claim: call("claim"),
    get: call("get"),
    update: call("update"),
    delete: call("delete"),
    list: call("list"),
    changes: call("changes"),
    purge: call("purge"),
    close: async () => {},
  };
}
