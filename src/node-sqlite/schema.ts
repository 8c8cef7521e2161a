import { SchemaVersionError } from "../errors/schema-version-error.js";
import { META_TABLE } from "../sqlite/table.js";
import type { DatabaseSync } from "./driver.js";
import { immediate } from "./transaction.js";

/**
 * Brings `table` to the newest version, as `idemkey/sqlite` does and in the same meta table, so either store opens a
 * file the other made: inside `BEGIN IMMEDIATE`, so that two processes opening one file migrate it once.
 */
export function ensureSchema(db: DatabaseSync, table: string, migrations: readonly string[]): void {
  const supported = migrations.length;
  immediate(db, () => {
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
