import { keyRange } from "../store/range.js";

/**
 * The two statements of `changes()`: the records of a prefix updated since a time, and how many it holds. The store
 * runs both in one transaction so that they agree. Both walk the prefix's range of the primary key inside SQLite (no
 * index on `updated_at`: adding one would cost every write), which for 10,000 records is a few milliseconds against
 * the tens a full `list()` costs in JavaScript, rows copied and parsed.
 */
export function changesStatements(table: string, columns: string, prefix: string | undefined, now: number) {
  const { where, values } = rangeWhere(prefix, now);
  return {
    rows: `SELECT ${columns} FROM ${table} WHERE ${where} AND updated_at >= ? ORDER BY key LIMIT ?`,
    count: `SELECT count(*) AS n FROM ${table} WHERE ${where}`,
    values,
  };
}

function rangeWhere(prefix: string | undefined, now: number) {
  const { lower, upper } = keyRange(prefix, undefined);
  const values: unknown[] = [now];
  let where = "expires_at > ?";
  if (lower) {
    where += " AND key >= ?";
    values.push(lower.key);
  }
  if (upper !== undefined) {
    where += " AND key < ?";
    values.push(upper);
  }
  // As in list(): exact where the bounds could not be derived (a lone surrogate).
  if (prefix !== undefined && prefix !== "") {
    where += " AND substr(key, 1, length(?)) = ?";
    values.push(prefix, prefix);
  }
  return { where, values };
}
