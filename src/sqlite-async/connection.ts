/*
 * The connection the async SQLite store runs on: two methods, because that is all D1 and a remote libSQL server
 * share. Neither has an interactive transaction (a BEGIN whose reads the caller looks at before deciding what to
 * write), so every step of the claim protocol is one statement or one batch, decided inside SQLite.
 */

/** A value bound to a `?` placeholder: what D1, libSQL and SQLite bind alike. */
export type SqlValue = string | number | null;

/**
 * A row as a plain object keyed by column name (or `AS` alias). Integers may come back as numbers, bigints or
 * decimal strings (libSQL's `intMode`); the store reads them with `Number`.
 */
export type SqlRow = Readonly<Record<string, unknown>>;

/** One statement of a batch: its SQL, with `?` placeholders only, and their values in order. */
export interface SqlStatement {
  readonly sql: string;
  readonly args: readonly SqlValue[];
}

/**
 * The narrow shape the store needs of an asynchronous SQLite connection with no interactive transaction: libSQL's
 * `Client` (`execute({ sql, args })`, `batch(statements, "write")`) and Cloudflare D1 (`prepare(sql).bind(...args)
 * .all()`, `batch([...])`) each adapt to it in a few lines. The store never asks for `BEGIN`, `COMMIT` or a
 * `PRAGMA`, and never reads a result before sending the write it decides: what it sends is decided in SQL.
 *
 * @example
 * // D1
 * const connection: AsyncSqlConnection = {
 *   query: async (sql, args) => (await db.prepare(sql).bind(...args).all()).results,
 *   batch: async (statements) =>
 *     (await db.batch(statements.map((s) => db.prepare(s.sql).bind(...s.args)))).map((r) => r.results),
 * };
 */
export interface AsyncSqlConnection {
  /**
   * Runs one statement on its own (autocommit) and resolves to the rows it returns; `[]` when there are none. The
   * store sends only reads this way (and the meta table's `CREATE TABLE IF NOT EXISTS`): each write goes as a
   * `batch` of its own, because an autocommit write's rows do not prove that it committed (libSQL's local driver
   * returns them uncommitted after an earlier SQLITE_BUSY on the connection; see `sqliteAsyncStore`). A rejection
   * may mean the statement applied or not; the store reports it as a `StoreError` and never assumes either.
   */
  query(sql: string, args: readonly SqlValue[]): Promise<readonly SqlRow[]>;
  /**
   * Runs the statements in order as one transaction (all applied or none, no other writer between them) and
   * resolves to each one's rows, in the same order. `intent` says whether any of them writes; a connection may use
   * it to take the write lock up front (libSQL `"write"`: `BEGIN IMMEDIATE`) or ignore it (D1, whose batches are
   * always transactions).
   */
  batch(
    statements: readonly SqlStatement[],
    intent: "read" | "write",
  ): Promise<readonly (readonly SqlRow[])[]>;
  /**
   * Whether an error is a lock conflict with another connection (SQLITE_BUSY) after which nothing was applied, so
   * that the store may send the same statement or batch again, after a pause, within `busyTimeoutMs`. Leave it out
   * where no other connection contends for a lock (D1): every error is then reported at once.
   */
  isBusy?(error: unknown): boolean;
}
