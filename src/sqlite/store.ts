import type BetterSqlite3 from "better-sqlite3";
import { importPeer } from "../peer/import-peer.js";
import { guardStore } from "../store/guard.js";
import { applyPatch, decideClaim, matches } from "../store/record.js";
import type {
  ClaimInput,
  ClaimResult,
  Expect,
  ListQuery,
  RecordPatch,
  Store,
  StoreOptions,
  StoreRecord,
} from "../store/types.js";
import { nextTurn } from "../store/yield.js";
import { listRecords } from "./list.js";
import { describe, resolveSqliteOptions } from "./options.js";
import { ensureSchema } from "./schema.js";
import { COLUMNS, migrations } from "./table.js";

type Database = BetterSqlite3.Database;

const { default: Sqlite } = await importPeer(
  "idemkey/sqlite",
  "better-sqlite3",
  "^12 || ^13",
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
   * event loop never freezes for the length of another process's transaction.
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
 * machine sharing the file (WAL mode; every read-modify-write runs inside `BEGIN IMMEDIATE`, which takes the file's
 * write lock before reading, so two processes can never both see a key as free).
 *
 * Pass a path (the store opens the file and closes it on `close()`) or a better-sqlite3 `Database` you already have
 * (it stays open; the store switches it to WAL and sets its busy timeout). Not for network file systems, where SQLite's
 * locks are unreliable: use PostgreSQL or Redis across machines.
 *
 * @example
 * const store = sqliteStore("./idemkey.db");
 */
export function sqliteStore(pathOrDatabase: string | Database, options: SqliteStoreOptions = {}): Store {
  const resolved = resolveSqliteOptions("sqliteStore", options);
  const owned = typeof pathOrDatabase === "string";
  const db = openDatabase(pathOrDatabase);
  // Opening is synchronous anyway (the factory returns the store), so the switch to WAL may wait the whole budget
  // for a lock another process holds.
  db.pragma(`busy_timeout = ${resolved.busyTimeoutMs}`);
  // In-memory databases answer "memory" and stay so; they are private to this connection anyway.
  db.pragma("journal_mode = WAL");
  const synchronous = resolved.synchronous ?? (owned ? "normal" : undefined);
  if (synchronous !== undefined) db.pragma(`synchronous = ${synchronous.toUpperCase()}`);
  // From here on better-sqlite3 would wait for a lock synchronously, freezing the event loop: only a short wait
  // there, and the rest of the budget as asynchronous retries (see `retryBusy`).
  db.pragma(`busy_timeout = ${Math.min(resolved.busyTimeoutMs, SYNC_BUSY_MS)}`);
  const { clock, table } = resolved;
  let statements: ReturnType<typeof prepare> | undefined;
  const ready = () => {
    if (statements) return statements;
    ensureSchema(db, table, migrations(table));
    const fresh = prepare(db, table);
    // Created inside a transaction the caller holds open, the table may still roll back with it: check again next time.
    if (!db.inTransaction) statements = fresh;
    return fresh;
  };

  const run = <T>(operation: string, key: string | undefined, fn: () => T): Promise<T> =>
    guardStore("sqlite", operation, key, () => retryBusy(fn, resolved.busyTimeoutMs));

  return {
    claim: (key: string, input: ClaimInput): Promise<ClaimResult> =>
      run("claim", key, () => ready().claim.immediate(key, input, clock())),
    get: (key: string) => run("get", key, () => ready().selectLive.get(key, clock())),
    update: (key: string, expect: Expect, patch: RecordPatch) =>
      run("update", key, () => ready().update.immediate(key, expect, patch, clock())),
    delete: (key: string, expect: Expect) =>
      run("delete", key, () => {
        const { changes } = ready().deleteMatching.run({
          key,
          now: clock(),
          token: expect.token ?? null,
          state: expect.state ?? null,
        });
        return changes > 0;
      }),
    list: (query: ListQuery = {}) => run("list", undefined, () => ready().list(query, clock())),
    // In statements of at most PURGE_CHUNK rows, each its own short write transaction, with a turn of the event
    // loop after each: one DELETE of 500k rows held the write lock ~3.4 s and froze the process for as long.
    purge: async ({ limit = 1000 } = {}) => {
      let removed = 0;
      while (removed < limit) {
        const chunk = Math.min(PURGE_CHUNK, limit - removed);
        const changes = await run("purge", undefined, () => ready().purge.run(clock(), chunk).changes);
        removed += changes;
        await nextTurn();
        if (changes < chunk) break;
      }
      return removed;
    },
    async close() {
      if (owned && db.open) db.close();
    },
  };
}

/** Rows one purge statement deletes at most: a few milliseconds of write lock. */
const PURGE_CHUNK = 500;

/** The longest synchronous wait for a lock: short enough that timers and I/O go on while another process writes. */
const SYNC_BUSY_MS = 20;

/**
 * Runs `fn`, and while it fails with `SQLITE_BUSY` (another connection holds the write lock past the short
 * synchronous wait) tries again after an asynchronous pause, until `budgetMs` is spent. Safe to repeat: a busy
 * statement or `BEGIN IMMEDIATE` applied nothing.
 */
async function retryBusy<T>(fn: () => T, budgetMs: number): Promise<T> {
  const started = performance.now();
  let pause = 2;
  for (;;) {
    try {
      return fn();
    } catch (error) {
      const code = (error as { code?: unknown })?.code;
      const busy = typeof code === "string" && code.startsWith("SQLITE_BUSY");
      if (!busy || performance.now() - started + pause > budgetMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 50);
    }
  }
}

function prepare(db: Database, table: string) {
  const selectLive = db.prepare<[string, number], StoreRecord>(
    `SELECT ${COLUMNS} FROM ${table} WHERE key = ? AND expires_at > ?`,
  );
  const put = db.prepare<[StoreRecord]>(
    `INSERT INTO ${table}
       (key, state, fingerprint, token, lease_until, attempts, result, data, created_at, updated_at, expires_at)
     VALUES (@key, @state, @fingerprint, @token, @leaseUntil, @attempts, @result, @data, @createdAt, @updatedAt, @expiresAt)
     ON CONFLICT (key) DO UPDATE SET state = excluded.state, fingerprint = excluded.fingerprint,
       token = excluded.token, lease_until = excluded.lease_until, attempts = excluded.attempts,
       result = excluded.result, data = excluded.data, created_at = excluded.created_at,
       updated_at = excluded.updated_at, expires_at = excluded.expires_at`,
  );
  // An expired row is absent: a claim replaces it whole.
  const claim = db.transaction((key: string, input: ClaimInput, now: number): ClaimResult => {
    const decision = decideClaim(key, selectLive.get(key, now), input, now);
    if (decision.status !== "exists") put.run(decision.record);
    return decision;
  });
  const update = db.transaction(
    (key: string, expect: Expect, patch: RecordPatch, now: number): StoreRecord | undefined => {
      const existing = selectLive.get(key, now);
      if (!existing || !matches(existing, expect)) return undefined;
      const record = applyPatch(existing, patch, now);
      put.run(record);
      return record;
    },
  );
  const deleteMatching = db.prepare<
    [{ key: string; now: number; token: string | null; state: string | null }]
  >(
    `DELETE FROM ${table} WHERE key = @key AND expires_at > @now
       AND (@token IS NULL OR token = @token) AND (@state IS NULL OR state = @state)`,
  );
  const list = listRecords(db, table, COLUMNS);
  const purge = db.prepare<[number, number]>(
    `DELETE FROM ${table} WHERE key IN (SELECT key FROM ${table} WHERE expires_at <= ? LIMIT ?)`,
  );
  return { selectLive, claim, update, deleteMatching, list, purge };
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
