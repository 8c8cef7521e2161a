import { describe } from "../options/describe.js";
import type { SqliteAsyncOptions } from "../sqlite-async/options.js";
import { sqliteAsyncStore } from "../sqlite-async/store.js";
import type { DriverName } from "../store/driver.js";
import type { Store } from "../store/types.js";
import { type LibsqlClient, libsqlConnection } from "./client.js";

/** How a libSQL store names itself in its errors. */
export const libsqlName: DriverName = { engine: "libsql", name: "libSQL" };

/** The options of `libsqlStore`: the async SQLite store's (clock, table, busyTimeoutMs). */
export type LibsqlStoreOptions = SqliteAsyncOptions;

/**
 * A store on a libSQL database through the `@libsql/client` `Client` you already have: a local `file:` database, an
 * embedded replica, or a remote libSQL server (Turso, `libsql://...`), all with the same statements. The same table
 * and encoding as `sqliteStore`, so a `file:` database either wrote means the same to the other. Every step of the
 * claim protocol is one statement or one batch decided inside SQLite (no interactive transaction is held open
 * across a round trip to a server). The store never closes the client.
 *
 * @example
 * import { createClient } from "@libsql/client";
 * const store = libsqlStore(createClient({ url: "file:ledger.db" }));
 */
export function libsqlStore(client: LibsqlClient, options: LibsqlStoreOptions = {}): Store {
  if (typeof (client as LibsqlClient | null)?.execute !== "function" || typeof client.batch !== "function") {
    throw new TypeError(
      `libsqlStore: client must be an @libsql/client Client (with execute and batch), got ${describe(client)}`,
    );
  }
  return sqliteAsyncStore(libsqlConnection(client), { driver: libsqlName, factory: "libsqlStore", options });
}
