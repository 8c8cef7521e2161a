/*
 * The store operations both SQLite stores share (better-sqlite3's `idemkey/sqlite` and `node:sqlite`'s
 * `idemkey/node-sqlite`), written once against the little each driver is adapted to. No driver is imported here.
 */
import type { DriverName } from "../store/driver.js";
import { guardStore } from "../store/guard.js";
import { recentClaims } from "../store/recent-claims.js";
import { decideClaim } from "../store/record.js";
import type { ChangesQuery, ClaimInput, ClaimResult, ListQuery, Store, StoreRecord } from "../store/types.js";
import { nextTurn } from "../store/yield.js";
import { changesStatements } from "./changes.js";
import { BACKSTOP_PAGES, CHECKPOINT_PAGES, type Checkpointer, LOG_LIMIT_BYTES } from "./checkpointer.js";
import { groupCommit } from "./group-commit.js";
import { listStatement } from "./list.js";
import type { ResolvedSqliteOptions } from "./options.js";
import { insertSql, purgeAgain, purgeSql, putSql, recordValues, updateStatement } from "./statements.js";
import { COLUMNS } from "./table.js";

export interface SqliteStatement {
  /** The first row as a plain object, or `undefined`. */
  get(...values: unknown[]): unknown;
  all(...values: unknown[]): unknown[];
  run(...values: unknown[]): { changes: number | bigint };
}

/** A connection as the shared operations use it; each store adapts its driver to this. */
export interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): void;
  /**
   * Runs `fn` inside a deferred transaction (`BEGIN`, or a savepoint inside the caller's transaction): the write
   * lock is taken at the first write, and commits or rolls back with `fn`.
   */
  deferred<T>(fn: () => T): T;
  /** Whether the caller holds a transaction open on this connection. */
  readonly inTransaction: boolean;
  /** Whether a driver error is SQLITE_BUSY (another connection holds the lock past the synchronous wait). */
  isBusy(error: unknown): boolean;
  /**
   * Whether the host runs the database itself, as a Durable Object runs its SQLite: then the store sends no PRAGMA
   * (the host refuses them, and chooses the journal and the durability) and groups no writes (the host refuses
   * `SAVEPOINT`, and commits each event's writes together on its own). `deferred` is then the host's transaction.
   * @default false
   */
  readonly hosted?: boolean;
}

/** The longest synchronous wait for a lock: short enough that timers and I/O go on while another process writes. */
const SYNC_BUSY_MS = 20;

/** Rows one purge statement deletes at most: a few milliseconds of write lock. */
const PURGE_CHUNK = 500;

/**
 * A SQLite store on `conn`. `ensureSchema` creates or migrates the table (it differs only in the driver it takes);
 * `close` closes what the store opened, once the writes still waiting for their group have run and the
 * checkpointer has stopped. At open only a short lock wait is synchronous: the switch to WAL mode, when another
 * process's lock makes it answer SQLITE_BUSY, is tried again by the first operation, asynchronously within
 * `busyTimeoutMs` (six processes opening one new file together hit it; a synchronous wait froze each of them for as
 * long).
 */
export function sqliteRecords(
  driver: DriverName,
  conn: SqliteConnection,
  resolved: ResolvedSqliteOptions,
  owned: boolean,
  ensureSchema: () => void,
  close: () => Promise<void>,
  checkpointer?: Checkpointer,
): Store {
  const { clock, table, busyTimeoutMs } = resolved;
  const configure = conn.hosted ? () => {} : openSettings(conn, resolved, owned, checkpointer);
  let configured = tryConfigure(conn, configure);

  const cache = new Map<string, SqliteStatement>();
  const statement = (sql: string): SqliteStatement => {
    let prepared = cache.get(sql);
    if (prepared === undefined) {
      prepared = conn.prepare(sql);
      cache.set(sql, prepared);
    }
    return prepared;
  };
  let schemaReady = false;
  const ready = () => {
    if (!configured) {
      configure();
      configured = true;
    }
    if (schemaReady) return;
    ensureSchema();
    // Created inside a transaction the caller holds open, the table may still roll back with it: check again next time.
    if (!conn.inTransaction) schemaReady = true;
  };
  const selectLive = `SELECT ${COLUMNS} FROM ${table} WHERE key = ? AND expires_at > ?`;
  const put = putSql(table);

  const attempt = <T>(fn: () => T): T => {
    ready();
    return fn();
  };
  // The first try runs synchronously, outside any async function: a claim or a completion that succeeds (nearly
  // all of them) costs one resolved promise instead of guardStore's and retryBusy's two async frames (~0.5 µs of
  // a claim and its completion in :memory:). A failure takes the guarded path: a busy lock is retried there after a
  // pause (not at once, which would wait the synchronous busy timeout a second time), anything else becomes the
  // same StoreError.
  const run = <T>(operation: string, key: string | undefined, fn: () => T): Promise<T> => {
    const started = performance.now();
    try {
      return Promise.resolve(attempt(fn));
    } catch (error) {
      return guardStore(driver, operation, key, () =>
        conn.isBusy(error)
          ? retryBusy(() => attempt(fn), busyTimeoutMs, conn.isBusy, started, error)
          : Promise.reject(error),
      );
    }
  };
  const live = (key: string, now: number) => statement(selectLive).get(key, now) as StoreRecord | undefined;
  const writes = conn.hosted ? undefined : groupCommit(conn, statement, ready);
  // A write runs at once or waits for the group (group-commit.ts); a caller that holds a transaction open on a
  // Database it passed in gets it at once, inside that transaction, as it always did.
  const write = <T>(operation: string, key: string, body: () => T, transactional = false): Promise<T> => {
    const alone = () => run(operation, key, transactional ? () => conn.deferred(body) : body);
    if (writes === undefined || conn.inTransaction) return alone();
    return writes.write({
      body,
      alone,
      failed: (error) => guardStore(driver, operation, key, () => Promise.reject(error)),
    });
  };
  const insert = insertSql(table);
  const recent = recentClaims();
  const saw = recent.saw;
  // `absent`: the read before found no live row. Then the new record is inserted unless a row is there, which saves
  // the transaction its read; only when one is (written since, or expired) is the key read and decided again.
  const claimNow = (key: string, input: ClaimInput, absent: boolean): ClaimResult => {
    const now = clock();
    if (absent) {
      const fresh = decideClaim(key, undefined, input, now);
      if (Number(statement(insert).run(...recordValues(fresh.record)).changes) === 1) {
        checkpointer?.wrote();
        saw(false);
        return fresh;
      }
    }
    const found = live(key, now);
    saw(found !== undefined);
    const decision = decideClaim(key, found, input, now);
    if (decision.status !== "exists") {
      statement(put).run(...recordValues(decision.record));
      checkpointer?.wrote();
    }
    return decision;
  };
  // What a claim can answer from a read alone: a replay, a conflict, a key running elsewhere write nothing, so they
  // are answered at once, without a transaction or the write lock. Anything else goes to the group, told whether the
  // key was absent; a read that failed says nothing (`undefined`), and the write then reports the failure.
  const readFirst = (key: string, input: ClaimInput): ClaimResult | "absent" | undefined => {
    try {
      return attempt(() => {
        const now = clock();
        const found = live(key, now);
        if (found === undefined) return "absent";
        const decision = decideClaim(key, found, input, now);
        if (decision.status !== "exists") return undefined;
        saw(true);
        return decision;
      });
    } catch {
      return undefined;
    }
  };

  return {
    // A claim that writes is one deferred transaction (the group's, or its own): in WAL mode an upgrade to a write
    // fails with SQLITE_BUSY_SNAPSHOT when another connection wrote since the read, and is retried, so two processes
    // never both claim a key.
    claim: (key: string, input: ClaimInput) => {
      // A claim that waits for the group reads first, and so does one while recent claims met records (replays):
      // a read alone costs a replay less than the same read in a transaction (5.3 against 8.1 µs p50), a new key a
      // little more than the transaction's read and insert (17.5 against 15.7). Otherwise the claim reads inside
      // its own transaction.
      const first = !conn.inTransaction && (writes?.waits() || recent.readFirst());
      const read = first ? readFirst(key, input) : undefined;
      if (typeof read === "object") return Promise.resolve(read);
      return write("claim", key, () => claimNow(key, input, read === "absent"), true);
    },
    get: (key: string) => run("get", key, () => live(key, clock())),
    update: (key, expect, patch) =>
      write("update", key, () => {
        const { sql, values, record } = updateStatement(table, key, expect, patch, clock());
        // all(), not get(): get() resets the statement after its first row, and an autocommit's failure to commit
        // there (SQLITE_FULL on a full disk) is dropped, so a completion that was never written read as written.
        const row = statement(sql).all(...values)[0] as Partial<StoreRecord> | undefined;
        if (row === undefined) return undefined;
        checkpointer?.wrote();
        return record(row);
      }),
    delete: (key, expect) =>
      write("delete", key, () => {
        const { changes } = statement(
          `DELETE FROM ${table} WHERE key = ? AND expires_at > ?
             AND (? IS NULL OR token = ?) AND (? IS NULL OR state = ?)`,
        ).run(
          key,
          clock(),
          expect.token ?? null,
          expect.token ?? null,
          expect.state ?? null,
          expect.state ?? null,
        );
        if (Number(changes) === 0) return false;
        checkpointer?.wrote();
        return true;
      }),
    list: (query: ListQuery = {}) =>
      run("list", undefined, () => {
        const { sql, values } = listStatement(table, COLUMNS, query, clock());
        return statement(sql).all(...values) as StoreRecord[];
      }),
    changes: (query: ChangesQuery) =>
      run("changes", undefined, () =>
        // One transaction, so that the count and the rows agree.
        conn.deferred(() => {
          const now = clock();
          const { rows, count, values } = changesStatements(table, COLUMNS, query.prefix, now);
          const records = statement(rows).all(...values, query.since, query.limit ?? 100) as StoreRecord[];
          const { n } = statement(count).get(...values) as { n: number | bigint };
          return { records, live: Number(n), now };
        }),
      ),
    // In batches of at most PURGE_CHUNK rows, each its own short write transaction, with a turn of the event loop
    // after each: one DELETE of 500k rows held the write lock ~3.4 s and froze the process for as long.
    purge: async ({ limit = 1000 } = {}) => {
      const sql = purgeSql(table);
      let removed = 0;
      while (removed < limit) {
        const chunk = Math.min(PURGE_CHUNK, limit - removed);
        const batch = await run("purge", undefined, () =>
          conn.deferred(() => {
            const now = clock();
            const due = statement(sql.due).all(now, chunk) as (Parameters<typeof purgeAgain>[0] & {
              key: string;
            })[];
            let gone = 0;
            for (const row of due) {
              if (row.expiresAt <= now) {
                statement(sql.remove).run(row.key);
                gone++;
              } else statement(sql.later).run(purgeAgain(row, now), row.key);
            }
            checkpointer?.wrote(due.length);
            return { seen: due.length, gone };
          }),
        );
        removed += batch.gone;
        await nextTurn();
        if (batch.seen < chunk) break;
      }
      return removed;
    },
    // The waiting writes first, then the worker, whose connection must not outlive the store's.
    close: async () => {
      writes?.drain();
      await checkpointer?.stop();
      await close();
    },
  };
}

/**
 * Sends the settings that take no lock at once, and returns the ones that may wait for another connection's lock
 * (the switch to WAL mode, `synchronous`), for `tryConfigure`.
 */
function openSettings(
  conn: SqliteConnection,
  resolved: ResolvedSqliteOptions,
  owned: boolean,
  checkpointer: Checkpointer | undefined,
): () => void {
  // From here on a lock is waited for synchronously only this long; the rest are asynchronous retries.
  conn.exec(`PRAGMA busy_timeout = ${Math.min(resolved.busyTimeoutMs, SYNC_BUSY_MS)}`);
  // A connection's own setting, which takes no lock; a Database passed in keeps the interval its owner chose.
  // Beside a checkpointer, SQLite's own checkpoints (on the event loop, inside a commit) are only a backstop.
  if (owned) conn.exec(`PRAGMA wal_autocheckpoint = ${checkpointer ? BACKSTOP_PAGES : CHECKPOINT_PAGES}`);
  if (checkpointer) conn.exec(`PRAGMA journal_size_limit = ${LOG_LIMIT_BYTES}`);
  const synchronous = resolved.synchronous ?? (owned ? "normal" : undefined);
  return () => {
    // In-memory databases answer "memory" and stay so; they are private to this connection anyway.
    conn.exec("PRAGMA journal_mode = WAL");
    if (synchronous !== undefined) conn.exec(`PRAGMA synchronous = ${synchronous.toUpperCase()}`);
  };
}

/** Applies the open-time settings now, or reports `false` when another connection's lock made them wait. */
function tryConfigure(conn: SqliteConnection, configure: () => void): boolean {
  try {
    configure();
    return true;
  } catch (error) {
    if (conn.isBusy(error)) return false;
    throw error;
  }
}

/**
 * Runs `fn` again, after `failed` (a `SQLITE_BUSY` of the try started at `started`: another connection holds the
 * write lock past the short synchronous wait), each time after an asynchronous pause, while it fails so and until
 * `budgetMs` is spent. Safe to repeat: a busy statement or `BEGIN IMMEDIATE` applied nothing.
 */
async function retryBusy<T>(
  fn: () => T,
  budgetMs: number,
  isBusy: (error: unknown) => boolean,
  started: number,
  failed: unknown,
): Promise<T> {
  let error = failed;
  let pause = 2;
  for (;;) {
    if (!isBusy(error) || performance.now() - started + pause > budgetMs) throw error;
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 50);
    try {
      return fn();
    } catch (thrown) {
      error = thrown;
    }
  }
}
