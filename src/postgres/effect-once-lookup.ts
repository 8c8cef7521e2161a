import type { EffectOnceLookup } from "../store/effect-once-lookup.js";
import { checkIdentifier, guard, type Queryable, qualified } from "./client.js";
import type { PostgresEffectOnceOptions } from "./effect-once.js";

export type { EffectOnceLookup };
/** @deprecated The same type for every store: `EffectOnceLookup`. */
export type PostgresEffectOnceLookup<T> = EffectOnceLookup<T>;

/** PostgreSQL's `undefined_table`: no `effectOnce` ever ran on this table, so no key was ever used. */
const UNDEFINED_TABLE = "42P01";

/**
 * Did the effect of `key` happen? Read from `effectOnce`'s own table, where the key commits with the effect or not
 * at all: `completed` (with the saved result) or `unknown`, which here means it did not take effect, since an effect
 * still running is not committed (under READ COMMITTED nobody sees it) and a retry with the key waits on the key's
 * unique index, then replays. What an owner answers a key lookup with (docs/reconciler.md). The table has no scope:
 * look up the key exactly as it was given to `effectOnce`, scoped to the caller the way you scoped it there. A
 * connection that fails is a `StoreError`, never `unknown`.
 *
 * @example
 * const found = await effectOnceLookup(pool, { key: `${account}:${key}` });
 */
export async function effectOnceLookup<T = unknown>(
  db: Queryable,
  options: Pick<PostgresEffectOnceOptions, "key" | "table" | "schema">,
): Promise<EffectOnceLookup<T>> {
  const { key, table, schema } = checkOptions(db, options);
  const { rows } = await guard("effectOnceLookup", key, () =>
    db
      .query(`SELECT result FROM ${qualified(schema, table)} WHERE key = $1`, [key])
      .catch((error: { code?: unknown }) => {
        if (error?.code === UNDEFINED_TABLE) return { rows: [], rowCount: 0 };
        throw error;
      }),
  );
  const row = rows[0] as { result: string | null } | undefined;
  if (row === undefined) return { state: "unknown" };
  return { state: "completed", result: (row.result === null ? undefined : JSON.parse(row.result)) as T };
}

function checkOptions(db: unknown, options: Pick<PostgresEffectOnceOptions, "key" | "table" | "schema">) {
  if (typeof (db as { query?: unknown } | null)?.query !== "function") {
    throw new TypeError("effectOnceLookup: db must be a pg.Pool or pg.Client (anything with query())");
  }
  if (typeof options !== "object" || options === null)
    throw new TypeError("effectOnceLookup: options must be an object");
  const { key, table = "idemkey_effects", schema = "public" } = options;
  if (typeof key !== "string" || key === "") {
    throw new TypeError(
      `effectOnceLookup: options.key must be a non-empty string, got ${JSON.stringify(key)}`,
    );
  }
  checkIdentifier("effectOnceLookup: options.table", table);
  checkIdentifier("effectOnceLookup: options.schema", schema);
  return { key, table, schema };
}
