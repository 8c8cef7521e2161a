import { keyRange } from "../store/range.js";
import type { Expect, StoreRecord } from "../store/types.js";
import { bytes, COLUMNS, recordValues } from "./records.js";

/**
 * The statement's instant in epoch ms on the server's clock: `UTC_TIMESTAMP(6)` is fixed for the whole statement,
 * and the difference from the epoch is arithmetic on UTC datetimes, so neither the session's time zone nor a DST
 * change moves it. With the store's `clock` option (tests) the parameter is used instead.
 */
export const NOW =
  "COALESCE(?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";

/** Collects a statement's parameters in the order its text uses them. */
export interface Params {
  values: unknown[];
  /** Adds a value and returns its placeholder. */
  add(value: unknown): string;
  /** `NOW` with the given instant (null: the server's clock) as its parameter. */
  now(): string;
}

export function params(given: number | null): Params {
  const values: unknown[] = [];
  return {
    values,
    add(value) {
      values.push(value);
      return "?";
    },
    now() {
      values.push(given);
      return NOW;
    },
  };
}

/**
 * A read of one key that always answers one row: the instant (`now_ms`), then the record's columns, NULL when there
 * is none. `lock` reads it with `FOR UPDATE`, inside a transaction, which holds the row until COMMIT.
 */
export function readKey(table: string, key: string, given: number | null, lock: boolean) {
  const p = params(given);
  const sql = `SELECT n.now_ms, ${COLUMNS.split(", ")
    .map((c) => `r.${c}`)
    .join(
      ", ",
    )} FROM (SELECT ${p.now()} AS now_ms) n LEFT JOIN ${table} r ON r.\`key\` = ${p.add(bytes(key))}${
    lock ? " FOR UPDATE" : ""
  }`;
  return { sql, values: p.values };
}

/**
 * The key bounds of `keyRange` as conditions the primary key can seek on; an exact byte prefix test where no upper
 * bound could be derived (a prefix with a lone surrogate, which reaches the server as U+FFFD).
 */
export function keyBounds(prefix: string | undefined, after: string | undefined, p: Params): string {
  const { lower, upper } = keyRange(prefix, after);
  let sql = "";
  if (lower) sql += ` AND \`key\` ${lower.inclusive ? ">=" : ">"} ${p.add(bytes(lower.key))}`;
  if (upper !== undefined) sql += ` AND \`key\` < ${p.add(bytes(upper))}`;
  if (prefix !== undefined && prefix !== "") {
    const b = bytes(prefix);
    sql += ` AND LEFT(\`key\`, ${b.length}) = ${p.add(b)}`;
  }
  return sql;
}

/** What an update or delete expects of the record, as conditions. */
export function conditions(expect: Expect, p: Params): string {
  let sql = "";
  if (expect.token !== undefined) sql += ` AND token = ${p.add(bytes(expect.token))}`;
  if (expect.state !== undefined) sql += ` AND state = ${p.add(expect.state)}`;
  return sql;
}

/** An UPDATE writing every column of `record` but its key, to the row of its key (locked by the caller). */
export function writeRecord(table: string, record: StoreRecord): [string, unknown[]] {
  const [key, ...rest] = recordValues(record);
  const sets = COLUMNS.split(", ")
    .slice(1)
    .map((column) => `${column} = ?`);
  return [`UPDATE ${table} SET ${sets.join(", ")} WHERE \`key\` = ?`, [...rest, key]];
}
