import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { durableObjectStore } from "../../src/cloudflare/index.js";
import type { Store } from "../../src/store/types.js";
import { testStore } from "../stores/contract.js";

/**
 * The store of a fresh object, on the suite's clock; every operation runs inside the object, through its own
 * request path (runInDurableObject), as a Worker's calls would.
 */
async function objectStore(name: string, clock: () => number): Promise<Store> {
  const stub = env.LEDGER.get(env.LEDGER.idFromName(name));
  let inside: Store | undefined;
  await runInDurableObject(stub, (_, state) => {
    inside = durableObjectStore(state.storage, { clock, table: "contract_records" });
  });
  const call =
    <K extends keyof Store>(method: K) =>
    (...args: Parameters<NonNullable<Store[K]>>) =>
      runInDurableObject(stub, () =>
        (inside![method] as (...a: unknown[]) => Promise<unknown>)(...args),
      ) as ReturnType<NonNullable<Store[K]>>;
  return {
    claim: call("claim"),
    get: call("get"),
    update: call("update"),
    delete: call("delete"),
    list: call("list"),
    purge: call("purge"),
    changes: call("changes"),
    close: call("close"),
  };
}

testStore("Durable Object SQLite (in workerd)", (clock) => objectStore("contract", clock));
