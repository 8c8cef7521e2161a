import { migrate } from "../sqlite/migrate.js";
import type { DatabaseSync } from "./driver.js";
import { immediate } from "./transaction.js";

/**
 * Brings `table` to the newest version, as `idemkey/sqlite` does and in the same meta table, so either store opens a
 * file the other made: inside `BEGIN IMMEDIATE`, so that two processes opening one file migrate it once.
 */
export function ensureSchema(db: DatabaseSync, table: string, migrations: readonly string[]): void {
  migrate(db, table, migrations, (step) => immediate(db, step));
}
