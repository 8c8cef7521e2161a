/*
 * The narrow shapes of Cloudflare's bindings that idemkey/cloudflare uses, written here so that the package needs
 * no @cloudflare/workers-types: a Durable Object's `ctx.storage` and a D1 database.
 */

/** What a Durable Object's `sql.exec` returns: a cursor over the rows, run as it is read. */
export interface SqlCursor {
  toArray(): Record<string, unknown>[];
  readonly rowsWritten: number;
}

/** A Durable Object's storage (`ctx.storage`) as `durableObjectStore` uses it: its SQLite API. */
export interface DurableObjectSqlStorage {
  sql: { exec(query: string, ...bindings: unknown[]): SqlCursor };
  transactionSync<T>(fn: () => T): T;
}

/** A D1 prepared statement as `d1Store` uses it: values bound in order, rows read back with `all`. */
export interface D1StatementLike {
  bind(...values: unknown[]): D1StatementLike;
  all(): Promise<{ results: Record<string, unknown>[] }>;
}

/** A D1 database binding (`env.DB`) as `d1Store` uses it: `prepare` and `batch`, which D1 runs as one transaction. */
export interface D1DatabaseLike {
  prepare(query: string): D1StatementLike;
  batch(statements: D1StatementLike[]): Promise<{ results: Record<string, unknown>[] }[]>;
}
