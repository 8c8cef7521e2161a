import { SchemaVersionError } from "../errors/schema-version-error.js";
import { StoreLayoutError } from "../errors/store-layout-error.js";
import { type MysqlQueryable, quoted } from "./client.js";

/** One row per idemkey table in a database: the table's name and the schema version it is at. */
export const META_TABLE = "idemkey_meta";

/**
 * A table's versions: `create` makes the newest from nothing (with `CREATE TABLE IF NOT EXISTS`, so that stores
 * starting together all succeed), and `columns` is the layout it must then have, `[name, data type]` in order, checked
 * against `information_schema` before the version is recorded: a table of that name that idemkey did not create is
 * refused with a `StoreLayoutError`, never written into. A later version adds its step here, run under `GET_LOCK` on
 * one connection (DDL commits on its own in MySQL, so a transaction cannot hold a migration together).
 */
export interface TableVersions {
  version: number;
  create(table: string): string;
  columns: readonly (readonly [string, string])[];
}

/** The `DATABASE()`-relative location in messages: `db.table`. */
const location = async (client: MysqlQueryable, table: string) => {
  const [rows] = (await client.query("SELECT DATABASE() AS db")) as [{ db: string | null }[], unknown];
  return `${rows[0]?.db ?? ""}.${table}`;
};

/**
 * Brings `table` to `versions.version` in the current database, or refuses it: a version newer than this idemkey's
 * with `SchemaVersionError`, a table of another layout (or not InnoDB, whose row locks and transactions the store
 * relies on) with `StoreLayoutError`.
 */
export async function migrate(client: MysqlQueryable, table: string, versions: TableVersions): Promise<void> {
  const meta = quoted(META_TABLE);
  await client.query(
    `CREATE TABLE IF NOT EXISTS ${meta} (name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin PRIMARY KEY,
      version INT NOT NULL) ENGINE=InnoDB`,
  );
  const [rows] = (await client.query(`SELECT version FROM ${meta} WHERE name = ?`, [table])) as [
    { version: number }[],
    unknown,
  ];
  const found = Number(rows[0]?.version ?? 0);
  if (found > versions.version) {
    throw new SchemaVersionError(await location(client, table), found, versions.version);
  }
  if (found === versions.version) return;
  await client.query(versions.create(quoted(table)));
  await checkLayout(client, table, versions);
  await client.query(
    `INSERT INTO ${meta} (name, version) VALUES (?, ?) ON DUPLICATE KEY UPDATE version = GREATEST(version, ?)`,
    [table, versions.version, versions.version],
  );
}

async function checkLayout(client: MysqlQueryable, table: string, versions: TableVersions): Promise<void> {
  const [columns] = (await client.query(
    `SELECT COLUMN_NAME AS name, DATA_TYPE AS type FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
    [table],
  )) as [{ name: string; type: string }[], unknown];
  const [tables] = (await client.query(
    "SELECT ENGINE AS engine FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
    [table],
  )) as [{ engine: string | null }[], unknown];
  const layout = columns.map((c) => `${String(c.name).toLowerCase()} ${String(c.type).toLowerCase()}`);
  const expected = versions.columns.map(([name, type]) => `${name} ${type}`);
  const innodb = String(tables[0]?.engine ?? "").toLowerCase() === "innodb";
  if (innodb && layout.join(",") === expected.join(",")) return;
  // Not a table idemkey wrote: no version of ours has this layout, which the error reports as layout 0.
  throw new StoreLayoutError({
    store: "mysql",
    location: await location(client, table),
    found: 0,
    supported: versions.version,
  });
}
