import type { Database } from "better-sqlite3";
import { migrate } from "./migrate.js";
import { META_TABLE } from "./table.js";

export { checkIdentifier } from "../store/identifier.js";
export { META_TABLE };

/**
 * Brings `table` to the newest version: `migrations[i]` is the SQL taking it from version `i` to `i + 1`. Runs in an
 * immediate (write-locked) transaction, so two processes opening the same file at once migrate it exactly once.
 */
export function ensureSchema(db: Database, table: string, migrations: readonly string[]): void {
  migrate(db, table, migrations, (step) => db.transaction(step).immediate());
}
