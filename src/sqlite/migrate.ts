import { SchemaVersionError } from "../errors/schema-version-error.js";
import { META_TABLE } from "./table.js";

/** The little of a SQLite connection a migration uses: better-sqlite3, node:sqlite and a Durable Object's all fit. */
export interface MigrationConnection {
  exec(sql: string): void;
  prepare(sql: string): { get(...values: unknown[]): unknown; run(...values: unknown[]): unknown };
}

/**
 * Brings `table` to the newest version in the one meta table every SQLite store shares, so that a record means the
 * same in each: `migrations[i]` is the SQL taking it from version `i` to `i + 1`. `transaction` runs the whole step
 * under the driver's write lock, so that two processes opening one file migrate it once.
 */
export function migrate(
  db: MigrationConnection,
  table: string,
  migrations: readonly string[],
  transaction: (step: () => void) => void,
): void {
  const supported = migrations.length;
  transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS ${META_TABLE} (name TEXT PRIMARY KEY, version INTEGER NOT NULL)`);
    const row = db.prepare(`SELECT version FROM ${META_TABLE} WHERE name = ?`).get(table) as
      | { version: number }
      | undefined;
    const found = row?.version ?? 0;
    if (found > supported) throw new SchemaVersionError(table, found, supported);
    if (found === supported) return;
    for (const sql of migrations.slice(found)) db.exec(sql);
    db.prepare(
      `INSERT INTO ${META_TABLE} (name, version) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET version = excluded.version`,
    ).run(table, supported);
  });
}
