import { SchemaVersionError } from "../errors/schema-version-error.js";
import type { SqliteConnection } from "../sqlite/records.js";
import { META_TABLE } from "../sqlite/table.js";

/**
 * Brings `table` to the newest version in the same meta table as the other SQLite stores, so a record means the
 * same in each: inside one of the object's transactions, which nothing else runs beside (an object is one thread).
 */
export function ensureSchema(conn: SqliteConnection, table: string, migrations: readonly string[]): void {
  const supported = migrations.length;
  conn.deferred(() => {
    conn.exec(`CREATE TABLE IF NOT EXISTS ${META_TABLE} (name TEXT PRIMARY KEY, version INTEGER NOT NULL)`);
    const row = conn.prepare(`SELECT version FROM ${META_TABLE} WHERE name = ?`).get(table) as
      | { version: number }
      | undefined;
    const found = row?.version ?? 0;
    if (found > supported) throw new SchemaVersionError(table, found, supported);
    if (found === supported) return;
    for (const sql of migrations.slice(found)) conn.exec(sql);
    conn
      .prepare(
        `INSERT INTO ${META_TABLE} (name, version) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET version = excluded.version`,
      )
      .run(table, supported);
  });
}
