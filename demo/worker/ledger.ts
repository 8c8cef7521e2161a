import { sqliteStore } from "../../src/sqlite/index.js";
import type { Store } from "../../src/store/index.js";
import type { LedgerSpec } from "../protocol.js";

/**
 * Opens the idemkey mode's shared ledger in this worker; `close()` also closes the client it opened. The server
 * clients are imported only when asked for, so that a worker on SQLite starts without loading them.
 */
export async function openLedger(spec: LedgerSpec): Promise<Store> {
  if (spec.kind === "sqlite") return sqliteStore(spec.path);
  if (spec.kind === "postgres") {
    const [{ default: pg }, { postgresStore }] = await Promise.all([
      import("pg"),
      import("../../src/postgres/index.js"),
    ]);
    const pool = new pg.Pool({ connectionString: spec.url, max: 4 });
    const store = postgresStore(pool, { table: spec.table });
    return { ...store, close: () => store.close().finally(() => pool.end()) };
  }
  const [{ Cluster, Redis }, { redisStore }] = await Promise.all([
    import("ioredis"),
    import("../../src/redis/index.js"),
  ]);
  // On a cluster, every node is a seed (a worker may start while one is dead), and ioredis's own retries of a
  // command whose node died outlast a failover (see the README).
  const client = spec.cluster
    ? new Cluster(spec.cluster, { retryDelayOnFailover: 200, maxRedirections: 64 })
    : new Redis(spec.url, { maxRetriesPerRequest: 3 });
  const store = redisStore(client, { prefix: spec.prefix });
  return {
    ...store,
    close: () =>
      store.close().finally(async () => {
        await client.quit();
      }),
  };
}
