import { migrate } from "../sqlite/migrate.js";
import type { SqliteConnection } from "../sqlite/records.js";

/**
 * Brings `table` to the newest version, as the other SQLite stores do: inside one of the object's transactions,
 * which nothing else runs beside (an object is one thread).
 */
export function ensureSchema(conn: SqliteConnection, table: string, migrations: readonly string[]): void {
  migrate(conn, table, migrations, (step) => conn.deferred(step));
}
