import { SchemaVersionError } from "../errors/schema-version-error.js";
import { META_TABLE } from "../sqlite/table.js";
import type { AsyncSqlConnection, SqlStatement } from "./connection.js";
import { int } from "./rows.js";

/**
 * Brings `table` to the newest version in the same meta table as the SQLite stores, with no interactive
 * transaction: the version is read, then every missing migration and the new version are sent as one batch. Two
 * callers that both read an old version both send it, and the second batch fails whole, since a migration's
 * `CREATE TABLE` or `ADD COLUMN` cannot run twice; reading the version again then finds it current, and only an
 * error that left the table behind is reported.
 */
export async function ensureSchema(
  conn: AsyncSqlConnection,
  table: string,
  migrations: readonly string[],
): Promise<void> {
  const supported = migrations.length;
  await conn.query(
    `CREATE TABLE IF NOT EXISTS ${META_TABLE} (name TEXT PRIMARY KEY, version INTEGER NOT NULL)`,
    [],
  );
  const version = async () => {
    const rows = await conn.query(`SELECT version FROM ${META_TABLE} WHERE name = ?`, [table]);
    return rows[0] === undefined ? 0 : int(rows[0].version);
  };
  const found = await version();
  if (found > supported) throw new SchemaVersionError(table, found, supported);
  if (found === supported) return;
  const statements: SqlStatement[] = migrations
    .slice(found)
    .flatMap(splitStatements)
    .map((sql) => ({ sql, args: [] }));
  statements.push({
    sql: `INSERT INTO ${META_TABLE} (name, version) VALUES (?, ?)
      ON CONFLICT (name) DO UPDATE SET version = excluded.version`,
    args: [table, supported],
  });
  try {
    await conn.batch(statements, "write");
  } catch (error) {
    if ((await version()) !== supported) throw error;
  }
}

/** A migration's statements one by one: a batch takes one statement each. Migrations hold no `;` in a literal. */
export function splitStatements(sql: string): string[] {
  return sql
    .split(";")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}
