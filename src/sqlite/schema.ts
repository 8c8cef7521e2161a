import type { Database } from "better-sqlite3";
import { SchemaVersionError } from "../errors/schema-version-error.js";

import { META_TABLE } from "./table.js";

export { checkIdentifier } from "../store/identifier.js";
export { META_TABLE };

/**
 * Brings `table` to the newest version: `migrations[i]` is the SQL taking it from version `i` to `i + 1`. Runs in an
 * immediate (write-locked) transaction, so two processes opening the same file at once migrate it exactly once.
 */
export function ensureSchema(db: Database, table: string, migrations: readonly string[]): void {
  const supported = migrations.length;
  db.transaction(() => {
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
  }).immediate();
}
