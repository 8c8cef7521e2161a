import type { EffectOnceLookup } from "../store/effect-once-lookup.js";
import { checkIdentifier, ER, errno, guard, type MysqlQueryable, quoted } from "./client.js";
import type { MysqlEffectOnceOptions } from "./effect-once.js";
import { bytes } from "./records.js";

export type { EffectOnceLookup };

/**
 * Did the effect of `key` happen? Read from `effectOnce`'s own table, where the key commits with the effect or not
 * at all: `completed` (with the saved result) or `unknown`, which here means it did not take effect, since an effect
 * still running is not committed (nobody else reads it) and a retry with the key waits on the key's primary key,
 * then replays. What an owner answers a key lookup with (docs/reconciler.md). Look up the key exactly as it was
 * given to `effectOnce`. A connection that fails is a `StoreError`, never `unknown`.
 *
 * @example
 * const found = await effectOnceLookup(pool, { key: `${account}:${key}` });
 */
export async function effectOnceLookup<T = unknown>(
  db: MysqlQueryable,
  options: Pick<MysqlEffectOnceOptions, "key" | "table">,
): Promise<EffectOnceLookup<T>> {
  const { key, table } = checkOptions(db, options);
  const [rows] = await guard("effectOnceLookup", key, () =>
    db
      .query(`SELECT result FROM ${quoted(table)} WHERE \`key\` = ?`, [bytes(key)])
      .catch((error: unknown) => {
        // No effectOnce ever ran on this table, so no key was ever used.
        if (errno(error) === ER.NO_SUCH_TABLE) return [[], undefined] as [unknown, unknown];
        throw error;
      }),
  );
  const row = (rows as { result: Buffer | string | null }[])[0];
  if (row === undefined) return { state: "unknown" };
  return {
    state: "completed",
    result: (row.result === null ? undefined : JSON.parse(String(row.result))) as T,
  };
}

function checkOptions(db: unknown, options: Pick<MysqlEffectOnceOptions, "key" | "table">) {
  if (typeof (db as { query?: unknown } | null)?.query !== "function") {
    throw new TypeError(
      "effectOnceLookup: db must be a mysql2/promise Pool or Connection (anything with query())",
    );
  }
  if (typeof options !== "object" || options === null)
    throw new TypeError("effectOnceLookup: options must be an object");
  const { key, table = "idemkey_effects" } = options;
  if (typeof key !== "string" || key === "") {
    throw new TypeError(
      `effectOnceLookup: options.key must be a non-empty string, got ${JSON.stringify(key)}`,
    );
  }
  checkIdentifier("effectOnceLookup: options.table", table);
  return { key, table };
}
