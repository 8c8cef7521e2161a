import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import { describe } from "../options/describe.js";
import { importPeer } from "../peer/import-peer.js";
import type { Store, StoreOptions } from "../store/types.js";
import { CHECKPOINT_PAGES, type Checkpointer, createCheckpointer } from "./checkpointer.js";
import { sqliteDriver } from "./description.js";
import { resolveSqliteOptions } from "./options.js";
import { type SqliteConnection, sqliteRecords } from "./records.js";
import { ensureSchema } from "./schema.js";
import { migrations } from "./table.js";

type Database = BetterSqlite3.Database;

const { default: Sqlite } = await importPeer(
  "idemkey/sqlite",
  "better-sqlite3",
  () => import("better-sqlite3"),
);

export interface SqliteStoreOptions extends StoreOptions {
  /**
   * The table the records live in, created on first use. Several stores (the harness ledger and the middleware, say)
   * may share one table, since their keys never collide, or keep one each.
   * @default "idemkey_records"
   */
  table?: string;
  /**
   * How long a write waits, in milliseconds, for another connection or process holding the file's write lock before
   * it fails with a `StoreError` (cause `SQLITE_BUSY`). Only the first few milliseconds are waited synchronously
   * (the connection's `busy_timeout`, set on one passed in too); the rest are asynchronous retries, so that the
   * event loop never freezes for the length of another process's transaction. At open too: a switch to WAL mode
   * that meets another process's lock is left to the first operation, which retries it within this budget.
   * @default 5000
   */
  busyTimeoutMs?: number;
  /**
   * SQLite's `synchronous` setting, which decides what a commit survives. With `"normal"` (in WAL mode) a committed
   * record survives any crash of the process, a `SIGKILL` included, but a power loss or an operating-system crash
   * can take back the last commits; each commit then costs no fsync, which makes a claim and its completion about
   * ten times cheaper. With `"full"`, every commit is on disk before it returns. The harness's ledger is a cache, so
   * `"normal"` suits it; an owner whose own effects survive a power loss and whose saved responses must too (the
   * middleware on SQLite) wants `"full"`.
   * @default "normal" for a file the store opens; a `Database` passed in keeps its own setting unless this is given
   */
  synchronous?: "normal" | "full";
}

/**
 * A store in a SQLite file through better-sqlite3: durable across restarts, and safe for several processes on one
 * machine sharing the file (WAL mode; a claim reads and writes in one transaction whose write fails, and is tried
 * again, when another process wrote since its read, so two processes can never both claim a key; an update is one
 * compare-and-set statement; a replay takes no write lock).
 *
 * Pass a path (the store opens the file and closes it on `close()`) or a better-sqlite3 `Database` you already have
 * (it stays open; the store switches it to WAL and sets its busy timeout). On a file it opens the store checkpoints
 * the write-ahead log from a worker thread (see `checkpointer.ts`: no checkpoint's fsyncs stall the event loop; the
 * log beside the file cut back to 16 MB, up to ~160 MB under sustained writes); a `Database` passed in keeps its own
 * checkpoints. Not for network file systems, where SQLite's locks are unreliable: use PostgreSQL or Redis across
 * machines.
 *
 * @example
 * const store = sqliteStore("./idemkey.db");
 */
export function sqliteStore(pathOrDatabase: string | Database, options: SqliteStoreOptions = {}): Store {
  const resolved = resolveSqliteOptions("sqliteStore", options);
  const owned = typeof pathOrDatabase === "string";
  const db = openDatabase(pathOrDatabase);
  const transaction = db.transaction((fn: () => unknown) => fn());
  const connection: SqliteConnection = {
    prepare: (sql) => db.prepare(sql),
    exec: (sql) => {
      db.exec(sql);
    },
    deferred: <T>(fn: () => T) => transaction(fn) as T,
    get inTransaction() {
      return db.inTransaction;
    },
    isBusy: (error) => {
      const code = (error as { code?: unknown })?.code;
      return typeof code === "string" && code.startsWith("SQLITE_BUSY");
    },
  };
  const { table } = resolved;
  const checkpointer = owned ? fileCheckpointer(db) : undefined;
  return sqliteRecords(
    sqliteDriver,
    connection,
    resolved,
    owned,
    () => ensureSchema(db, table, migrations(table)),
    async () => {
      if (owned && db.open) db.close();
    },
    checkpointer,
  );
}

/**
 * The checkpointer of a file the store opened, on the better-sqlite3 found from here. None for an in-memory database,
 * or where none is found from here (idemkey bundled into an application's file): SQLite's own checkpoints then.
 */
function fileCheckpointer(db: Database): Checkpointer | undefined {
  if (db.memory) return undefined;
  let module: string;
  try {
    module = createRequire(import.meta.url).resolve("better-sqlite3");
  } catch {
    return undefined;
  }
  return createCheckpointer({
    path: db.name,
    module,
    onFailure: () => {
      if (db.open) db.exec(`PRAGMA wal_autocheckpoint = ${CHECKPOINT_PAGES}`);
    },
  });
}

function openDatabase(pathOrDatabase: unknown): Database {
  if (typeof pathOrDatabase === "string" && pathOrDatabase !== "") return new Sqlite(pathOrDatabase);
  if (
    typeof pathOrDatabase === "object" &&
    pathOrDatabase !== null &&
    typeof (pathOrDatabase as Database).prepare === "function" &&
    typeof (pathOrDatabase as Database).transaction === "function"
  ) {
    return pathOrDatabase as Database;
  }
  throw new TypeError(
    `sqliteStore: pathOrDatabase must be a file path, ":memory:" or a better-sqlite3 Database, got ${describe(pathOrDatabase)}`,
  );
}
