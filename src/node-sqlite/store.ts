import { describe } from "../options/describe.js";
import { CHECKPOINT_PAGES, createCheckpointer } from "../sqlite/checkpointer.js";
import { resolveSqliteOptions } from "../sqlite/options.js";
import { type SqliteConnection, sqliteRecords } from "../sqlite/records.js";
import { migrations } from "../sqlite/table.js";
import type { Store, StoreOptions, StoreRecord } from "../store/types.js";
import { nodeSqliteDriver } from "./description.js";
import { type DatabaseSync, nodeSqlite } from "./driver.js";
import { ensureSchema } from "./schema.js";
import { deferred } from "./transaction.js";

export interface NodeSqliteStoreOptions extends StoreOptions {
  /**
   * The table the records live in, created on first use; the same table and schema as `sqliteStore`'s, so either
   * store opens a file the other wrote.
   * @default "idemkey_records"
   */
  table?: string;
  /**
   * How long a write waits, in milliseconds, for another connection or process holding the file's write lock before
   * it fails with a `StoreError`. As in `sqliteStore`, only a short wait is synchronous and the rest are
   * asynchronous retries, so the event loop never freezes for another process's transaction.
   * @default 5000
   */
  busyTimeoutMs?: number;
  /**
   * SQLite's `synchronous` setting: `"normal"` (in WAL mode a commit survives any crash of the process, not a power
   * loss) or `"full"` (every commit on disk before it returns). See `sqliteStore`.
   * @default "normal" for a file the store opens; a `DatabaseSync` passed in keeps its own unless this is given
   */
  synchronous?: "normal" | "full";
}

/**
 * A store in a SQLite file through Node.js's built-in `node:sqlite` (Node.js 22.13 or later): no native addon to
 * compile or download. The same table, code, locking and guarantees as `sqliteStore` (WAL mode, several processes
 * on one machine may share the file, the log of a file it opens checkpointed from a worker thread), and the same
 * contract. Pass a path (the store opens and closes it) or a `DatabaseSync` you have (it stays open and keeps its
 * own checkpoints).
 *
 * @example
 * const store = nodeSqliteStore("./idemkey.db");
 */
export function nodeSqliteStore(
  pathOrDatabase: string | DatabaseSync,
  options: NodeSqliteStoreOptions = {},
): Store {
  const resolved = resolveSqliteOptions("nodeSqliteStore", options);
  if (nodeSqlite === undefined) {
    throw new TypeError(
      `nodeSqliteStore needs node:sqlite, in Node.js 22.13 or later; this is Node.js ${process.versions.node}. ` +
        "Use sqliteStore from idemkey/sqlite (better-sqlite3) on older Node.js.",
    );
  }
  const owned = typeof pathOrDatabase === "string";
  const db = openDatabase(nodeSqlite.DatabaseSync, pathOrDatabase);
  let open = true;
  const connection: SqliteConnection = {
    prepare: (sql) => {
      const statement = db.prepare(sql);
      return {
        get: (...values) => {
          const row = statement.get(...values);
          return row === undefined ? undefined : plain(row);
        },
        all: (...values) => statement.all(...values).map(plain),
        run: (...values) => statement.run(...values),
      };
    },
    exec: (sql) => db.exec(sql),
    deferred: (fn) => deferred(db, fn),
    get inTransaction() {
      return db.isTransaction === true;
    },
    isBusy: (error) => {
      const { errcode, code, message } = (error ?? {}) as {
        errcode?: unknown;
        code?: unknown;
        message?: unknown;
      };
      if (typeof errcode === "number") return (errcode & 0xff) === 5;
      // Deno's node:sqlite gives no errcode, only SQLite's text for SQLITE_BUSY.
      return code === "ERR_SQLITE_ERROR" && message === "database is locked";
    },
  };
  const { table } = resolved;
  // A file the store opened is checkpointed on a worker thread, as sqliteStore's (none for an in-memory database).
  const checkpointer =
    typeof pathOrDatabase === "string" && pathOrDatabase !== ":memory:"
      ? createCheckpointer({
          path: pathOrDatabase,
          module: "node:sqlite",
          onFailure: () => {
            if (open) db.exec(`PRAGMA wal_autocheckpoint = ${CHECKPOINT_PAGES}`);
          },
        })
      : undefined;
  return sqliteRecords(
    nodeSqliteDriver,
    connection,
    resolved,
    owned,
    () => ensureSchema(db, table, migrations(table)),
    async () => {
      if (owned && open) {
        open = false;
        db.close();
      }
    },
    checkpointer,
  );
}

/** node:sqlite returns rows with a null prototype: hand out plain objects, as every other store does. */
function plain(row: unknown): StoreRecord {
  return { ...(row as StoreRecord) };
}

function openDatabase(
  DatabaseSync: new (path: string) => DatabaseSync,
  pathOrDatabase: unknown,
): DatabaseSync {
  if (typeof pathOrDatabase === "string" && pathOrDatabase !== "") return new DatabaseSync(pathOrDatabase);
  if (
    typeof pathOrDatabase === "object" &&
    pathOrDatabase !== null &&
    typeof (pathOrDatabase as DatabaseSync).prepare === "function" &&
    typeof (pathOrDatabase as DatabaseSync).exec === "function"
  ) {
    return pathOrDatabase as DatabaseSync;
  }
  throw new TypeError(
    `nodeSqliteStore: pathOrDatabase must be a file path, ":memory:" or a node:sqlite DatabaseSync, got ${describe(pathOrDatabase)}`,
  );
}
