import { SchemaVersionError } from "../errors/schema-version-error.js";
import { type Queryable, qualified } from "./client.js";

/** One row per idemkey table in a schema: the table's name and the schema version it is at. */
export const META_TABLE = "idemkey_meta";

/** Every idemkey migration in a database takes this transaction-scoped advisory lock, so concurrent starters queue. */
const MIGRATION_LOCK = "hashtext('idemkey:migrate')";

/**
 * Brings `schema.table` to the newest version: `migrations[i]` is the SQL taking it from version `i` to `i + 1`.
 * All of it runs in one `DO` block, so it is one transaction on one connection even through a pool, and the advisory
 * lock taken first makes processes that start together migrate once. A version newer than `migrations.length` is
 * left alone and refused with `SchemaVersionError`.
 */
export async function migrate(
  client: Queryable,
  schema: string,
  table: string,
  migrations: readonly string[],
): Promise<void> {
  const meta = qualified(schema, META_TABLE);
  const steps = migrations.map((sql, i) => `IF found < ${i + 1} THEN ${sql} END IF;`).join("\n");
  await client.query(`DO $idemkey$
DECLARE found integer;
BEGIN
  PERFORM pg_advisory_xact_lock(${MIGRATION_LOCK});
  CREATE TABLE IF NOT EXISTS ${meta} (name text PRIMARY KEY, version integer NOT NULL);
  SELECT coalesce(max(version), 0) INTO found FROM ${meta} WHERE name = '${table}';
  ${steps}
  IF found < ${migrations.length} THEN
    INSERT INTO ${meta} (name, version) VALUES ('${table}', ${migrations.length})
      ON CONFLICT (name) DO UPDATE SET version = excluded.version;
  END IF;
END
$idemkey$`);
  const { rows } = await client.query(`SELECT version FROM ${meta} WHERE name = $1`, [table]);
  const found = Number((rows[0] as { version: number } | undefined)?.version ?? 0);
  if (found > migrations.length) throw new SchemaVersionError(`${schema}.${table}`, found, migrations.length);
}
