import { StoreError } from "../../src/errors/store-error.js";
import type { Store } from "../../src/store/types.js";

type Method = "claim" | "get" | "update" | "delete" | "list" | "purge";

/**
 * A store whose server "goes down" on the test's command: while down, every operation fails with a `StoreError`
 * (as a driver's connection error becomes one) without reaching the inner store, so nothing is applied. `failWhen`
 * fails chosen operations only (the completion write, say) for as long as it returns true.
 */
export function flakyStore(inner: Store) {
  let downUntil = 0;
  let failWhen: ((method: Method, args: unknown[]) => boolean) | undefined;
  const calls: { method: Method; failed: boolean }[] = [];

  const wrap =
    (method: Method) =>
    async (...args: unknown[]): Promise<unknown> => {
      const failed = Date.now() < downUntil || failWhen?.(method, args) === true;
      calls.push({ method, failed });
      if (failed) {
        const key = typeof args[0] === "string" ? args[0] : undefined;
        throw new StoreError("flaky", method, key, `flaky store: ${method} failed: the server is down`, {
          cause: new Error("ECONNREFUSED"),
        });
      }
      return (inner[method] as (...a: unknown[]) => Promise<unknown>)(...args);
    };

  const store: Store = {
    claim: wrap("claim") as Store["claim"],
    get: wrap("get") as Store["get"],
    update: wrap("update") as Store["update"],
    delete: wrap("delete") as Store["delete"],
    list: wrap("list") as Store["list"],
    purge: wrap("purge") as Store["purge"],
    close: () => inner.close(),
  };
  return {
    store,
    calls,
    /** Every operation fails for the next `ms` milliseconds. */
    down(ms: number): void {
      downUntil = Date.now() + ms;
    },
    up(): void {
      downUntil = 0;
      failWhen = undefined;
    },
    failWhen(predicate: (method: Method, args: unknown[]) => boolean): void {
      failWhen = predicate;
    },
  };
}

/** The patch of a completion write: what a down store must fail for the save-retry rule to matter. */
export const isCompletion = (method: Method, args: unknown[]): boolean =>
  method === "update" && (args[2] as { state?: string } | undefined)?.state === "completed";
