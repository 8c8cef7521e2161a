import type BetterSqlite3 from "better-sqlite3";
import { IdempotencyConflictError } from "../errors/idempotency-conflict-error.js";
import type { EffectOnceLookup } from "../store/effect-once-lookup.js";
import { checkIdentifier, ensureSchema } from "./schema.js";

type Database = BetterSqlite3.Database;

// Named with its driver, as PostgresEffectOnceOptions is: two effectOnce functions, one name each for their options.
export interface SqliteEffectOnceOptions {
  /** The idempotency key: the one an agent's harness derived and forwarded, or a client's `Idempotency-Key`. */
  key: string;
  /**
   * What the key was used for (a hash of the request). A later call with the same key and another fingerprint is a
   * conflict, not a replay; giving none on the first call and one later (or the reverse) counts as different.
   * @default undefined (no fingerprint)
   */
  fingerprint?: string;
  /**
   * The table that records used keys and their results, created on first use next to your own tables. Rows are
   * never deleted by idemkey: they are as durable as the effects they stand for.
   * @default "idemkey_effects"
   */
  table?: string;
}

export interface SqliteEffectOnceResult<T> {
  /** The effect's return value the first time; its JSON round-trip (`JSON.parse(JSON.stringify(x))`) on a replay. */
  result: T;
  /** `true` when the key had been used before and the effect did not run now. */
  replayed: boolean;
}

/** @deprecated Named `SqliteEffectOnceOptions` now. */
export type EffectOnceOptions = SqliteEffectOnceOptions;
/** @deprecated Named `SqliteEffectOnceResult` now. */
export type EffectOnceResult<T> = SqliteEffectOnceResult<T>;

const migrations = (table: string): string[] => [
  `CREATE TABLE ${table} (
    key TEXT PRIMARY KEY,
    fingerprint TEXT,
    result TEXT,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID;`,
];

type Statements = ReturnType<typeof prepare>;
const prepared = new WeakMap<Database, Map<string, Statements>>();

/**
 * Runs `effect` at most once per key, for an owner whose side effect is a write to its own SQLite database: the key
 * is inserted (`ON CONFLICT (key) DO NOTHING`) and the effect runs in the same `BEGIN IMMEDIATE` transaction, so the
 * effect's writes and the key commit together or not at all. A duplicate gets the saved result; a crash at any point
 * leaves either both or neither, and the retry does the right thing.
 *
 * Prefer it to an `Idempotency-Key` middleware whenever the effect lives in the same database as the key: the
 * middleware keeps the key in a store beside the effect, so a crash between the effect and the saved response leaves
 * an outcome that nobody can know; one transaction closes that window completely. Use the middleware for effects that
 * leave the database (an email, a payment API), and this helper for the rows you own.
 *
 * The effect must be synchronous (better-sqlite3 is) and return something `JSON.stringify` accepts; if it throws, the
 * transaction rolls back, the key stays unused, and the error propagates. Called inside an open transaction, it runs
 * in a savepoint of it.
 *
 * @example
 * const { result, replayed } = effectOnce(db, { key, fingerprint }, (db) =>
 *   db.prepare("INSERT INTO orders (sku, qty) VALUES (?, ?) RETURNING id").get(sku, qty),
 * );
 */
export function effectOnce<T>(
  db: Database,
  options: SqliteEffectOnceOptions,
  effect: (db: Database) => T,
): SqliteEffectOnceResult<T> {
  const { key, fingerprint, table } = checkOptions(db, options, effect);
  const statements = statementsFor(db, table);
  const run = db.transaction((): SqliteEffectOnceResult<T> => {
    if (statements.insert.run(key, fingerprint, Date.now()).changes === 0) {
      const row = statements.select.get(key)!;
      if (row.fingerprint !== fingerprint) {
        throw new IdempotencyConflictError({ key });
      }
      return { result: (row.result === null ? undefined : JSON.parse(row.result)) as T, replayed: true };
    }
    const result = effect(db);
    if (typeof (result as { then?: unknown } | null)?.then === "function") {
      throw new TypeError(
        "effectOnce: the effect returned a promise; it must run synchronously in the transaction",
      );
    }
    statements.saveResult.run(JSON.stringify(result) ?? null, key);
    return { result, replayed: false };
  });
  return run.immediate();
}

export type { EffectOnceLookup };
/** @deprecated The same type for every store: `EffectOnceLookup`. */
export type SqliteEffectOnceLookup<T> = EffectOnceLookup<T>;

/**
 * Did the effect of `key` happen? Read from `effectOnce`'s own table, where the key commits with the effect or not
 * at all: `completed` (with the saved result) or `unknown`, which here means it did not take effect, since an effect
 * still running is not committed and a retry with the key is deduped by `effectOnce` anyway. What an owner answers a
 * key lookup with (docs/reconciler.md). The table has no scope: look up the key exactly as it was given to
 * `effectOnce`, scoped to the caller the way you scoped it there.
 *
 * @example
 * const found = effectOnceLookup(db, { key: `${account}:${key}` });
 */
export function effectOnceLookup<T = unknown>(
  db: Database,
  options: Pick<SqliteEffectOnceOptions, "key" | "table">,
): EffectOnceLookup<T> {
  const { key, table } = checkOptions(db, options, () => undefined);
  const row = statementsFor(db, table).select.get(key);
  if (row === undefined) return { state: "unknown" };
  return { state: "completed", result: (row.result === null ? undefined : JSON.parse(row.result)) as T };
}

function statementsFor(db: Database, table: string): Statements {
  const tables = prepared.get(db) ?? new Map<string, Statements>();
  prepared.set(db, tables);
  let statements = tables.get(table);
  if (!statements) {
    ensureSchema(db, table, migrations(table));
    statements = prepare(db, table);
    // Created inside the caller's open transaction, the table may still roll back with it: check again next time.
    if (!db.inTransaction) tables.set(table, statements);
  }
  return statements;
}

function prepare(db: Database, table: string) {
  return {
    insert: db.prepare<[string, string | null, number]>(
      `INSERT INTO ${table} (key, fingerprint, created_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING`,
    ),
    select: db.prepare<[string], { fingerprint: string | null; result: string | null }>(
      `SELECT fingerprint, result FROM ${table} WHERE key = ?`,
    ),
    saveResult: db.prepare<[string | null, string]>(`UPDATE ${table} SET result = ? WHERE key = ?`),
  };
}

function checkOptions(db: unknown, options: SqliteEffectOnceOptions, effect: unknown) {
  if (typeof (db as Database | null)?.transaction !== "function") {
    throw new TypeError("effectOnce: db must be a better-sqlite3 Database");
  }
  if (typeof options !== "object" || options === null)
    throw new TypeError("effectOnce: options must be an object");
  const { key, fingerprint = null, table = "idemkey_effects" } = options;
  if (typeof key !== "string" || key === "") {
    throw new TypeError(`effectOnce: options.key must be a non-empty string, got ${JSON.stringify(key)}`);
  }
  if (fingerprint !== null && typeof fingerprint !== "string") {
    throw new TypeError(`effectOnce: options.fingerprint must be a string, got ${typeof fingerprint}`);
  }
  checkIdentifier("effectOnce: options.table", table);
  if (typeof effect !== "function") throw new TypeError("effectOnce: effect must be a function");
  return { key, fingerprint, table };
}
