/*
 * The narrow shape of an @libsql/client `Client` that libsqlStore uses, written here so that the package's types
 * need no @libsql/client: `execute` and `batch`, the two methods a local file, an embedded replica and a remote
 * libSQL server (Turso) all answer alike.
 */
import type { AsyncSqlConnection, SqlRow, SqlValue } from "../sqlite-async/connection.js";

/** One statement as libSQL takes it: positional `?` values only. */
export interface LibsqlStatement {
  sql: string;
  args: SqlValue[];
}

/** A libSQL client as `libsqlStore` uses it: `createClient({ url })` of `@libsql/client` (or `/web`) is one. */
export interface LibsqlClient {
  execute(statement: LibsqlStatement): Promise<{ rows: readonly SqlRow[] }>;
  batch(statements: LibsqlStatement[], mode?: "write" | "read"): Promise<{ rows: readonly SqlRow[] }[]>;
}

/**
 * The client as the async SQLite store's connection. A batch is libSQL's own transaction: `"write"` opens it with
 * `BEGIN IMMEDIATE`, so a claim's read and upsert hold the write lock between them.
 */
export function libsqlConnection(client: LibsqlClient): AsyncSqlConnection {
  return {
    query: async (sql, args) => (await client.execute({ sql, args: [...args] })).rows,
    batch: async (statements, intent) =>
      (
        await client.batch(
          statements.map((s) => ({ sql: s.sql, args: [...s.args] })),
          intent,
        )
      ).map((result) => result.rows),
    // A local file shared by several processes: another one's write lock, or a COMMIT refused while a statement
    // that met SQLITE_BUSY earlier is still open on the connection (see sqliteAsyncStore's `write`). Either way the
    // client rolled the batch back: nothing applied.
    isBusy: (error) => (error as { code?: unknown } | null)?.code === "SQLITE_BUSY",
  };
}
