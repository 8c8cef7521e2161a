import { StoreError } from "../errors/store-error.js";
import { applyPatch, matches } from "../store/record.js";
import type { Expect, ListQuery, RecordPatch, Store, StoreRecord } from "../store/types.js";
import { CLAIM_ATTEMPTS, claimer } from "./claim.js";
import { guard, type MysqlPoolLike, quoted, type ResultHeader } from "./client.js";
import { changes, list, purge } from "./list.js";
import { type MysqlStoreOptions, resolveOptions } from "./options.js";
import { COLUMNS, checkSizes, type Row, toRecord } from "./records.js";
import { migrate } from "./schema.js";
import { conditions, params, readKey, writeRecord } from "./statements.js";
import { recordsTable } from "./table.js";
import { inTransaction } from "./transaction.js";

export type { MysqlStoreOptions } from "./options.js";

/**
 * A store in a MySQL 8 or MariaDB 10.11 table, shared by every process that reaches the database. Pass the
 * `mysql2/promise` pool you already have (the store never opens or closes connections). Leases and expiry are
 * decided on the server's clock. A claim is a plain read when the key holds a live record (a replay: one statement),
 * one `INSERT` for a new key, and a short `SELECT ... FOR UPDATE` transaction when it replaces an expired record or
 * takes over a lapsed lease; an update is such a transaction too, so that it answers exactly the record it wrote
 * without `RETURNING`, which MySQL lacks. A deadlock or a lock wait timeout, which the server says it rolled back, runs
 * the operation again; any other failure is a `StoreError`, whose outcome may or may not have been applied.
 *
 * @example
 * const store = mysqlStore(mysql.createPool(process.env.DATABASE_URL));
 */
export function mysqlStore(pool: MysqlPoolLike, options: MysqlStoreOptions = {}): Store {
  const p = pool as Partial<MysqlPoolLike> | null;
  if (typeof p?.query !== "function" || typeof p.getConnection !== "function") {
    throw new TypeError("mysqlStore: pool must be a mysql2/promise Pool (query and getConnection)");
  }
  const { clock, table } = resolveOptions(options);
  const t = quoted(table);
  let init: Promise<void> | undefined;
  const ready = () => {
    init ??= migrate(pool, table, recordsTable).catch((error: unknown) => {
      init = undefined; // a later call tries again, for example once the server is back
      throw error;
    });
    return init;
  };
  /** The `now` a statement is given: null lets the server's clock decide; the `clock` option (tests) otherwise. */
  const given = () => (clock ? clock() : null);
  const claimRound = claimer(pool, t, given);

  return {
    claim: (key, input) =>
      guard("claim", key, async () => {
        checkSizes(key, input);
        await ready();
        for (let round = 0; round < CLAIM_ATTEMPTS; round++) {
          const result = await claimRound(key, input);
          if (result) return result;
        }
        throw new StoreError({ store: "mysql", operation: "claim", key, reason: "contention" });
      }),
    get: (key) =>
      guard("get", key, async () => {
        checkSizes(key);
        await ready();
        const q = params(given());
        const [rows] = (await pool.query(
          `SELECT ${COLUMNS} FROM ${t} WHERE \`key\` = ${q.add(Buffer.from(key))} AND expires_at > ${q.now()}`,
          q.values,
        )) as [Row[], unknown];
        return rows[0] && toRecord(rows[0]);
      }),
    update: (key: string, expect: Expect, patch: RecordPatch) =>
      guard("update", key, async () => {
        checkSizes(key);
        await ready();
        return inTransaction<StoreRecord | undefined>(pool, async (connection) => {
          const { sql, values } = readKey(t, key, given(), true);
          const [rows] = (await connection.query(sql, values)) as [Row[], unknown];
          const row = rows[0]!;
          const now = Number(row.now_ms);
          const record = row.key === null ? undefined : toRecord(row);
          if (!record || record.expiresAt <= now || !matches(record, expect)) {
            return { value: undefined, commit: false };
          }
          const next = applyPatch(record, patch, now);
          await connection.query(...writeRecord(t, next));
          return { value: next, commit: true };
        });
      }),
    delete: (key, expect) =>
      guard("delete", key, async () => {
        checkSizes(key);
        await ready();
        const q = params(given());
        const where = `\`key\` = ${q.add(Buffer.from(key))} AND expires_at > ${q.now()}${conditions(expect, q)}`;
        const [header] = (await pool.query(`DELETE FROM ${t} WHERE ${where}`, q.values)) as [
          ResultHeader,
          unknown,
        ];
        return header.affectedRows > 0;
      }),
    list: (query: ListQuery = {}) =>
      guard("list", undefined, async () => {
        await ready();
        return list(pool, t, given(), query);
      }),
    changes: (query) =>
      guard("changes", undefined, async () => {
        await ready();
        return changes(pool, t, given(), query);
      }),
    purge: ({ limit = 1000 } = {}) =>
      guard("purge", undefined, async () => {
        await ready();
        return purge(pool, t, given(), limit);
      }),
    // The pool belongs to the caller, who ends it.
    async close() {},
  };
}
