import { describe, resolveSqliteOptions } from "../sqlite/options.js";
import { COLUMNS, migrations } from "../sqlite/table.js";
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
import { type DatabaseSync, nodeSqlite } from "./driver.js";
import { ensureSchema } from "./schema.js";
import { immediate } from "./transaction.js";

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

/** The longest synchronous wait for a lock (see `sqliteStore`). */
const SYNC_BUSY_MS = 20;

/**
 * A store in a SQLite file through Node.js's built-in `node:sqlite` (Node.js 22.13 or later): no native addon to
 * compile or download. The same table, locking and guarantees as `sqliteStore` (WAL mode, every read-modify-write in
 * `BEGIN IMMEDIATE`, several processes on one machine may share the file), and the same contract. Pass a path (the
 * store opens and closes it) or a `DatabaseSync` you have (it stays open).
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
  // The switch to WAL takes the file's lock once, at open: wait for it with the whole budget (see sqliteStore).
  db.exec(`PRAGMA busy_timeout = ${resolved.busyTimeoutMs}`);
  db.exec("PRAGMA journal_mode = WAL");
  const synchronous = resolved.synchronous ?? (owned ? "normal" : undefined);
  if (synchronous !== undefined) db.exec(`PRAGMA synchronous = ${synchronous.toUpperCase()}`);
  db.exec(`PRAGMA busy_timeout = ${Math.min(resolved.busyTimeoutMs, SYNC_BUSY_MS)}`);
  const { clock, table } = resolved;
  let statements: ReturnType<typeof prepare> | undefined;
  const ready = () => {
    if (statements) return statements;
    ensureSchema(db, table, migrations(table));
    statements = prepare(db, table);
    return statements;
  };
  const run = <T>(operation: string, key: string | undefined, fn: () => T): Promise<T> =>
    guardStore("node-sqlite", operation, key, () => retryBusy(fn, resolved.busyTimeoutMs));

  return {
    claim: (key: string, input: ClaimInput): Promise<ClaimResult> =>
      run("claim", key, () => {
        const s = ready();
        return immediate(db, () => {
          const now = clock();
          const decision = decideClaim(key, s.selectLive(key, now), input, now);
          if (decision.status !== "exists") s.put(decision.record);
          return decision;
        });
      }),
    get: (key: string) => run("get", key, () => ready().selectLive(key, clock())),
    update: (key: string, expect: Expect, patch: RecordPatch) =>
      run("update", key, () => {
        const s = ready();
        return immediate(db, () => {
          const now = clock();
          const existing = s.selectLive(key, now);
          if (!existing || !matches(existing, expect)) return undefined;
          const record = applyPatch(existing, patch, now);
          s.put(record);
          return record;
        });
      }),
    delete: (key: string, expect: Expect) =>
      run("delete", key, () => {
        const { changes } = ready().deleteMatching.run({
          key,
          now: clock(),
          token: expect.token ?? null,
          state: expect.state ?? null,
        });
        return Number(changes) > 0;
      }),
    list: (query: ListQuery = {}) =>
      run("list", undefined, () =>
        ready()
          .list.all({
            now: clock(),
            prefix: query.prefix ?? null,
            state: query.state ?? null,
            after: query.after ?? null,
            limit: query.limit ?? 100,
          })
          .map(plain),
      ),
    purge: ({ limit = 1000 } = {}) =>
      run("purge", undefined, () => Number(ready().purge.run(clock(), limit).changes)),
    async close() {
      if (owned && open) {
        open = false;
        db.close();
      }
    },
  };
}

/** node:sqlite returns rows with a null prototype: hand out plain objects, as every other store does. */
function plain(row: unknown): StoreRecord {
  return { ...(row as StoreRecord) };
}

function prepare(db: DatabaseSync, table: string) {
  const select = db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE key = ? AND expires_at > ?`);
  const upsert = db.prepare(
    `INSERT INTO ${table}
       (key, state, fingerprint, token, lease_until, attempts, result, data, created_at, updated_at, expires_at)
     VALUES (@key, @state, @fingerprint, @token, @leaseUntil, @attempts, @result, @data, @createdAt, @updatedAt, @expiresAt)
     ON CONFLICT (key) DO UPDATE SET state = excluded.state, fingerprint = excluded.fingerprint,
       token = excluded.token, lease_until = excluded.lease_until, attempts = excluded.attempts,
       result = excluded.result, data = excluded.data, created_at = excluded.created_at,
       updated_at = excluded.updated_at, expires_at = excluded.expires_at`,
  );
  return {
    selectLive: (key: string, now: number): StoreRecord | undefined => {
      const row = select.get(key, now);
      return row === undefined ? undefined : plain(row);
    },
    put: (record: StoreRecord) => {
      upsert.run({
        key: record.key,
        state: record.state,
        fingerprint: record.fingerprint,
        token: record.token,
        leaseUntil: record.leaseUntil,
        attempts: record.attempts,
        result: record.result,
        data: record.data,
        createdAt: record.createdAt,
        updatedAt: record.updatedAt,
        expiresAt: record.expiresAt,
      });
    },
    deleteMatching: db.prepare(
      `DELETE FROM ${table} WHERE key = @key AND expires_at > @now
         AND (@token IS NULL OR token = @token) AND (@state IS NULL OR state = @state)`,
    ),
    list: db.prepare(
      `SELECT ${COLUMNS} FROM ${table} WHERE expires_at > @now
         AND (@prefix IS NULL OR (key >= @prefix AND substr(key, 1, length(@prefix)) = @prefix))
         AND (@state IS NULL OR state = @state) AND (@after IS NULL OR key > @after)
       ORDER BY key LIMIT @limit`,
    ),
    purge: db.prepare(
      `DELETE FROM ${table} WHERE key IN (SELECT key FROM ${table} WHERE expires_at <= ? LIMIT ?)`,
    ),
  };
}

/** Retries a statement that met another connection's write lock (SQLITE_BUSY), asynchronously, within the budget. */
async function retryBusy<T>(fn: () => T, budgetMs: number): Promise<T> {
  const started = performance.now();
  let pause = 2;
  for (;;) {
    try {
      return fn();
    } catch (error) {
      const errcode = (error as { errcode?: unknown })?.errcode;
      const busy = typeof errcode === "number" && (errcode & 0xff) === 5;
      if (!busy || performance.now() - started + pause > budgetMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 50);
    }
  }
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
