import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { durableObjectStore, objectStore, serveStore } from "../../src/cloudflare/index.js";
import type { Store } from "../../src/store/types.js";
import { testStore } from "../stores/contract.js";

/**
 * A Durable Object store served by one object and used by another party over RPC (objectStore), as an McpAgent of
 * one MCP session uses a ledger every session shares: each operation crosses the stub, none runs in the caller.
 */
async function sharedStore(name: string, clock: () => number): Promise<Store> {
  const stub = env.SHARED.get(env.SHARED.idFromName(name));
  await runInDurableObject(stub, (instance, state) => {
    instance.serve = serveStore(durableObjectStore(state.storage, { clock, table: "contract_records" }));
  });
  return objectStore(stub);
}

testStore("Durable Object SQLite over RPC (objectStore, in workerd)", (clock) =>
  sharedStore("contract", clock),
);
