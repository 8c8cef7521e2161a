/*
 * The store contract over an asynchronous SQLite connection with no interactive transaction (libSQL, Cloudflare
 * D1): the same table and rules as `src/sqlite/records.ts`, each step one statement or one atomic batch.
 */
import { StoreError } from "../errors/store-error.js";
import { changesStatements } from "../sqlite/changes.js";
import { listStatement } from "../sqlite/list.js";
import { updateStatement } from "../sqlite/statements.js";
import { COLUMNS, migrations } from "../sqlite/table.js";
import type { DriverName } from "../store/driver.js";
import { guardStore } from "../store/guard.js";
import { recentClaims } from "../store/recent-claims.js";
import type { ChangesQuery, ClaimInput, ClaimResult, ListQuery, Store } from "../store/types.js";
import { asIs, batchAnswer, claimBatch, insertNewSql, newValues, replaces } from "./claim.js";
import type { AsyncSqlConnection, SqlValue } from "./connection.js";
import { type ResolvedSqliteAsyncOptions, resolveSqliteAsyncOptions } from "./options.js";
import { purgeSql } from "./purge.js";
import { retryBusy } from "./retry.js";
import { int, numbers, toRecord } from "./rows.js";
import { ensureSchema } from "./schema.js";

/** What a store built on these records says about itself, and what it releases on `close`. */
export interface SqliteAsyncSettings {
  /** The store's description: its `engine` names it in every `StoreError`, its `name` in their advice. */
  driver: DriverName;
  /** The factory's name, for the `TypeError` of a bad option: `"libsqlStore"`. */
  factory: string;
  /** The caller's options, checked here (see `SqliteAsyncOptions`). */
  options?: unknown;
  /** Releases what the store opened itself (a client it made from a URL); the caller's connection stays open. */
  close?: () => Promise<void>;
}

/** Rows one purge round moves or deletes at most. */
const PURGE_CHUNK = 500;

/**
 * Claim batches sent again when their read and their write disagree, which only a connection whose batches are not
 * atomic gives; the write itself still decided alone, so this only bounds the retries before a `StoreError`.
 */
const CLAIM_ATTEMPTS = 5;

/**
 * A store on `connection`, the narrow shape of `AsyncSqlConnection`: the store contract with `sqliteStore`'s table,
 * columns and encoding, so a file either wrote means the same to the other. No step needs a transaction held open
 * across a round trip: a claim is `INSERT ... ON CONFLICT DO NOTHING RETURNING` for a new key, else one batch of a
 * read (for `previous`) and an `INSERT ... ON CONFLICT DO UPDATE ... WHERE <expired, or a lapsed lease of the same
 * fingerprint> RETURNING` whose `WHERE` alone decides who holds the key; an update is one compare-and-set `UPDATE
 * ... WHERE key = ? AND token = ? AND state = ? AND expires_at > ? RETURNING`; a delete one `DELETE ... RETURNING`.
 * The table is created or migrated on first use, by one batch.
 *
 * @example
 * const store = sqliteAsyncStore(connection, { driver: d1Driver, factory: "d1Store", options });
 */
export function sqliteAsyncStore(connection: AsyncSqlConnection, settings: SqliteAsyncSettings): Store {
  const { driver, factory } = settings;
  if (
    typeof (connection as AsyncSqlConnection | null)?.query !== "function" ||
    typeof connection.batch !== "function"
  ) {
    throw new TypeError(
      `${factory}: the connection must have query(sql, args) and batch(statements, intent)`,
    );
  }
  const resolved: ResolvedSqliteAsyncOptions = resolveSqliteAsyncOptions(factory, settings.options ?? {});
  const { clock, table, busyTimeoutMs } = resolved;
  const isBusy = connection.isBusy?.bind(connection);

  let init: Promise<void> | undefined;
  const ready = () => {
    init ??= retryBusy(() => ensureSchema(connection, table, migrations(table)), isBusy, busyTimeoutMs).catch(
      (error: unknown) => {
        init = undefined; // a later call tries again, once the database answers
        throw error;
      },
    );
    return init;
  };
  // Each operation: the schema, then its statements, sent again while another connection holds the lock, and any
  // driver failure as a StoreError (guardStore) that never says whether a write applied.
  const run = <T>(operation: string, key: string | undefined, fn: () => Promise<T>): Promise<T> =>
    guardStore(driver, operation, key, async () => {
      await ready();
      return retryBusy(fn, isBusy, busyTimeoutMs);
    });
  const query = (sql: string, args: readonly SqlValue[]) => connection.query(sql, args);
  /**
   * A write, always as a batch of its own: a transaction whose COMMIT the connection checks, never an autocommit
   * `query`. libSQL's local driver (the `libsql` package under `@libsql/client`'s `file:` URLs) leaves a statement
   * that failed with SQLITE_BUSY unreset until the garbage collector finalizes it, and SQLite counts it as a running
   * writer: the next autocommit write on that connection then runs and returns its `RETURNING` rows, but is not
   * committed (SQLite commits when the last writer ends), holds the lock, and is rolled back when the stale statement
   * is finalized. A claim's insert retried after SQLITE_BUSY thus answered `claimed` for a row no other process ever
   * saw, and the other process claimed the key afresh: two processes ran one key's tool. In a transaction, the same
   * stale statement makes COMMIT fail ("cannot commit transaction - SQL statements in progress", SQLITE_BUSY), the
   * client rolls back, and the store sends it again: what it reports applied has committed.
   */
  const write = async (sql: string, args: readonly SqlValue[]) =>
    (await connection.batch([{ sql, args }], "write"))[0] ?? [];
  const selectLive = `SELECT ${COLUMNS} FROM ${table} WHERE key = ? AND expires_at > ?`;
  const insertNew = insertNewSql(table);
  const recent = recentClaims();

  /** The claim's batch, sent again (bounded) only if its read and write disagree. */
  const claimWrite = async (key: string, input: ClaimInput): Promise<ClaimResult> => {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const now = clock();
      const [before, after] = await connection.batch(claimBatch(table, key, input, now), "write");
      const answer = batchAnswer(before?.[0], after?.[0], input, now);
      if (answer !== undefined) {
        recent.saw(before?.[0] !== undefined && int(before[0].expiresAt) > now);
        return answer;
      }
    }
    throw new StoreError({ store: driver.engine, operation: "claim", key, reason: "contention" });
  };

  const claim = async (key: string, input: ClaimInput): Promise<ClaimResult> => {
    // While recent claims met records (replays), a read answers without a write; otherwise a new key costs one
    // insert. Either way, a claim that must write over a row goes to the batch.
    if (recent.readFirst()) {
      const now = clock();
      const rows = await query(selectLive, [key, now]);
      if (rows[0] !== undefined) {
        const record = toRecord(rows[0]);
        if (!replaces(record, input, now)) {
          recent.saw(true);
          return asIs(record, input);
        }
        return claimWrite(key, input);
      }
    }
    const rows = await write(insertNew, newValues(key, input, clock()));
    if (rows[0] !== undefined) {
      recent.saw(false);
      return { status: "claimed", record: toRecord(rows[0]) };
    }
    return claimWrite(key, input);
  };

  return {
    claim: (key, input) => run("claim", key, () => claim(key, input)),
    get: (key) =>
      run("get", key, async () => {
        const rows = await query(selectLive, [key, clock()]);
        return rows[0] === undefined ? undefined : toRecord(rows[0]);
      }),
    update: (key, expect, patch) =>
      run("update", key, async () => {
        const { sql, values, record } = updateStatement(table, key, expect, patch, clock());
        const rows = await write(sql, values as SqlValue[]);
        return rows[0] === undefined ? undefined : record(numbers(rows[0]));
      }),
    delete: (key, expect) =>
      run("delete", key, async () => {
        const rows = await write(
          `DELETE FROM ${table} WHERE key = ? AND expires_at > ?
             AND (? IS NULL OR token = ?) AND (? IS NULL OR state = ?) RETURNING key`,
          [
            key,
            clock(),
            expect.token ?? null,
            expect.token ?? null,
            expect.state ?? null,
            expect.state ?? null,
          ],
        );
        return rows.length > 0;
      }),
    list: (query: ListQuery = {}) =>
      run("list", undefined, async () => {
        const { sql, values } = listStatement(table, COLUMNS, query, clock());
        return (await connection.query(sql, values as SqlValue[])).map(toRecord);
      }),
    changes: (changes: ChangesQuery) =>
      run("changes", undefined, async () => {
        const now = clock();
        // libSQL and D1 bind finite numbers only; a watcher that has seen nothing asks from -Infinity.
        const since = Number.isFinite(changes.since) ? changes.since : Number.MIN_SAFE_INTEGER;
        const { rows, count, values } = changesStatements(table, COLUMNS, changes.prefix, now);
        // One batch, so that the count and the rows agree.
        const [records, counted] = await connection.batch(
          [
            { sql: rows, args: [...(values as SqlValue[]), since, changes.limit ?? 100] },
            { sql: count, args: values as SqlValue[] },
          ],
          "read",
        );
        return { records: (records ?? []).map(toRecord), live: int(counted?.[0]?.n ?? 0), now };
      }),
    purge: async ({ limit = 1000 } = {}) => {
      const sql = purgeSql(table);
      let removed = 0;
      while (removed < limit) {
        const chunk = Math.min(PURGE_CHUNK, limit - removed);
        const [moved, gone] = await run("purge", undefined, () => {
          const now = clock();
          return connection.batch(
            [
              { sql: sql.later, args: [now, now, chunk, now] },
              { sql: sql.remove, args: [now, now, chunk] },
            ],
            "write",
          );
        });
        removed += gone?.length ?? 0;
        // Fewer due rows than a chunk: nothing is left to look at by now.
        if ((moved?.length ?? 0) + (gone?.length ?? 0) < chunk) break;
      }
      return removed;
    },
    close: async () => {
      await settings.close?.();
    },
  };
}
