import { keyRange } from "../store/range.js";
import type { ListQuery } from "../store/types.js";

/**
 * The SQL of one page and its values. `key > ?` and `key < ?` written out let SQLite seek the primary key, where
 * `(@after IS NULL OR key > @after)` made a page at the end of 100k records scan all of them (O(n²) to page through
 * a table). Exported for the test that reads its query plan.
 */
export function listStatement(table: string, columns: string, query: ListQuery, now: number) {
  const { lower, upper } = keyRange(query.prefix, query.after);
  const values: unknown[] = [now];
  let where = "expires_at > ?";
  if (lower) {
    where += lower.inclusive ? " AND key >= ?" : " AND key > ?";
    values.push(lower.key);
  }
  if (upper !== undefined) {
    where += " AND key < ?";
    values.push(upper);
  }
  // The bounds make the range; this keeps the test exact where they could not be derived (a lone surrogate).
  if (query.prefix !== undefined && query.prefix !== "") {
    where += " AND substr(key, 1, length(?)) = ?";
    values.push(query.prefix, query.prefix);
  }
  if (query.state !== undefined) {
    where += " AND state = ?";
    values.push(query.state);
  }
  values.push(query.limit ?? 100);
  return { sql: `SELECT ${columns} FROM ${table} WHERE ${where} ORDER BY key LIMIT ?`, values };
}
