import { describe } from "../options/describe.js";
import type { AsyncSqlConnection } from "../sqlite-async/connection.js";
import type { SqliteAsyncOptions } from "../sqlite-async/options.js";
import { sqliteAsyncStore } from "../sqlite-async/store.js";
import type { DriverName } from "../store/driver.js";
import type { Store } from "../store/types.js";
import type { D1DatabaseLike } from "./storage.js";

/** How a D1 store names itself in its errors. */
const d1Name: DriverName = { engine: "d1", name: "Cloudflare D1" };

/**
 * The options of `d1Store`: the async SQLite store's. `busyTimeoutMs` has nothing to wait for on D1, where no other
 * connection holds a lock: every error is reported at once.
 */
export type D1StoreOptions = Omit<SqliteAsyncOptions, "busyTimeoutMs">;

/**
 * A store on a Cloudflare D1 database (`env.DB`), shared by every Worker invocation and every location that binds
 * it. D1 has no interactive transaction, so each step of the claim protocol is one statement (`INSERT ... ON
 * CONFLICT DO NOTHING RETURNING` for a new key, a compare-and-set `UPDATE ... RETURNING`) or one batch, which D1 runs
 * as a transaction (a claim over an existing row: its read and an upsert whose `WHERE` alone decides). Two
 * invocations racing on one key: one claims it, the other finds it held. The same table and encoding as
 * `sqliteStore`. Leases and expiry are measured on the invocation's clock (`Date.now`, which workerd advances only
 * across I/O): invocations in different locations should not lean on leases shorter than a few seconds.
 *
 * @example
 * export default {
 *   async fetch(request, env) {
 *     const harness = createHarness({ store: d1Store(env.DB) });
 *   },
 * };
 */
export function d1Store(db: D1DatabaseLike, options: D1StoreOptions = {}): Store {
  if (typeof (db as D1DatabaseLike | null)?.prepare !== "function" || typeof db.batch !== "function") {
    throw new TypeError(`d1Store: db must be a D1 database binding (env.DB), got ${describe(db)}`);
  }
  const prepare = (sql: string, args: readonly unknown[]) => db.prepare(sql).bind(...args);
  const connection: AsyncSqlConnection = {
    query: async (sql, args) => (await prepare(sql, args).all()).results,
    // D1 runs a batch as one transaction whatever it holds, so the intent is not needed.
    batch: async (statements) =>
      (await db.batch(statements.map((s) => prepare(s.sql, s.args)))).map((result) => result.results),
  };
  return sqliteAsyncStore(connection, { driver: d1Name, factory: "d1Store", options });
}
