import { describe } from "../options/describe.js";
import { resolveSqliteOptions } from "../sqlite/options.js";
import { type SqliteConnection, sqliteRecords } from "../sqlite/records.js";
import { migrations } from "../sqlite/table.js";
import type { DriverName } from "../store/driver.js";
import type { Store, StoreOptions } from "../store/types.js";
import { ensureSchema } from "./schema.js";
import type { DurableObjectSqlStorage } from "./storage.js";

/** How a Durable Object store names itself in its errors. */
const durableObjectName: DriverName = { engine: "durable-object", name: "Durable Object SQLite" };

export interface DurableObjectStoreOptions extends StoreOptions {
  /**
   * The table the records live in, created on first use: the same table and schema as `sqliteStore`'s.
   * @default "idemkey_records"
   */
  table?: string;
}

/**
 * A store in a Durable Object's own SQLite (`ctx.storage`, a class under a `new_sqlite_classes` migration): the
 * ledger of one agent, or of one shard of an owner's keys. The same table, statements and decisions as
 * `sqliteStore`; each claim runs inside `transactionSync`, and nothing else runs beside it, since an object is one
 * thread. Records survive hibernation and eviction. Keys are only as shared as the object is: route every call
 * for a key to the same object (`idFromName`).
 *
 * @example
 * export class Agent extends DurableObject {
 *   store = durableObjectStore(this.ctx.storage);
 * }
 */
export function durableObjectStore(
  storage: DurableObjectSqlStorage,
  options: DurableObjectStoreOptions = {},
): Store {
  if (
    typeof storage !== "object" ||
    storage === null ||
    typeof storage.sql?.exec !== "function" ||
    typeof storage.transactionSync !== "function"
  ) {
    throw new TypeError(
      `durableObjectStore: storage must be a Durable Object's ctx.storage with SQLite (a class under new_sqlite_classes), got ${describe(storage)}`,
    );
  }
  const resolved = resolveSqliteOptions("durableObjectStore", options);
  const { sql } = storage;
  const conn: SqliteConnection = {
    prepare: (text) => ({
      get: (...values) => sql.exec(text, ...values).toArray()[0],
      all: (...values) => sql.exec(text, ...values).toArray(),
      run: (...values) => {
        // Read to the end, which runs the statement to completion. rowsWritten counts index rows too: changes() is
        // the rows the statement itself changed, as the other drivers report.
        sql.exec(text, ...values).toArray();
        return { changes: sql.exec("SELECT changes() AS n").toArray()[0]!.n as number };
      },
    }),
    exec: (text) => {
      sql.exec(text).toArray();
    },
    deferred: (fn) => storage.transactionSync(fn),
    // The store's writes never join a transaction of the caller's: each runs in its own transactionSync, which
    // nests as a savepoint when the caller holds one.
    inTransaction: false,
    // One thread owns the database: no other connection can hold a lock.
    isBusy: () => false,
    hosted: true,
  };
  const { table } = resolved;
  return sqliteRecords(
    durableObjectName,
    conn,
    resolved,
    false,
    () => ensureSchema(conn, table, migrations(table)),
    async () => {},
  );
}
