import { sinceMs } from "../store/since.js";
import type { Changes, ChangesQuery, ListQuery, StoreRecord } from "../store/types.js";
import type { MysqlQueryable, ResultHeader } from "./client.js";
import { COLUMNS, type Row, toRecord } from "./records.js";
import { keyBounds, params } from "./statements.js";

/*
 * The statements that walk the table rather than one key: list, changes and purge, each bounded by its limit and
 * seeking on the primary key's byte order.
 */

export async function list(db: MysqlQueryable, table: string, given: number | null, query: ListQuery) {
  const p = params(given);
  let where = `expires_at > ${p.now()}${keyBounds(query.prefix, query.after, p)}`;
  if (query.state !== undefined) where += ` AND state = ${p.add(query.state)}`;
  const [rows] = (await db.query(
    `SELECT ${COLUMNS} FROM ${table} WHERE ${where} ORDER BY \`key\` LIMIT ${p.add(query.limit ?? 100)}`,
    p.values,
  )) as [Row[], unknown];
  return rows.map(toRecord);
}

/**
 * One statement, so one read view and one instant (`UTC_TIMESTAMP` is fixed for a statement) for the count, the rows
 * and `now`: the count's derived table always answers one row, and the LEFT JOIN keeps it when nothing changed.
 */
export async function changes(
  db: MysqlQueryable,
  table: string,
  given: number | null,
  query: ChangesQuery,
): Promise<Changes> {
  const p = params(given);
  const counted = `SELECT ${p.now()} AS now_ms, COUNT(*) AS live FROM ${table} WHERE expires_at > ${p.now()}${keyBounds(query.prefix, undefined, p)}`;
  const changed = `SELECT ${COLUMNS} FROM ${table} WHERE expires_at > ${p.now()}${keyBounds(query.prefix, undefined, p)}
    AND updated_at >= ${p.add(sinceMs(query.since))} ORDER BY \`key\` LIMIT ${p.add(query.limit ?? 100)}`;
  const [rows] = (await db.query(
    `SELECT c.now_ms, c.live, r.* FROM (${counted}) c LEFT JOIN (${changed}) r ON TRUE ORDER BY r.\`key\``,
    p.values,
  )) as [(Row & { live: unknown })[], unknown];
  const first = rows[0]!;
  const records: StoreRecord[] = first.key === null ? [] : rows.map(toRecord);
  return { records, live: Number(first.live), now: Number(first.now_ms) };
}

/** Deletes up to `limit` expired records, oldest expiry first. */
export async function purge(db: MysqlQueryable, table: string, given: number | null, limit: number) {
  const p = params(given);
  const [header] = (await db.query(
    `DELETE FROM ${table} WHERE expires_at <= ${p.now()} ORDER BY expires_at LIMIT ${p.add(limit)}`,
    p.values,
  )) as [ResultHeader, unknown];
  return header.affectedRows;
}
