/*
 * The claim protocol's step as statements that decide inside SQLite, for a connection with no interactive
 * transaction. The rule is decideClaim's (src/store/record.ts), said in SQL: the `WHERE` of one upsert is the only
 * place that decides who holds a key, so two callers racing on one key can never both claim it, batch or not.
 */

import { COLUMNS } from "../sqlite/table.js";
import { newRecord, resent } from "../store/record.js";
import type { ClaimInput, ClaimResult, StoreRecord } from "../store/types.js";
import type { SqlRow, SqlStatement, SqlValue } from "./connection.js";
import { toRecord } from "./rows.js";

/** The record columns as `recordValues` (src/sqlite/statements.ts) writes them, `purge_from` last. */
const INSERT_COLUMNS = `(key, state, fingerprint, token, lease_until, attempts, result, data, created_at,
  updated_at, expires_at, purge_from)`;

/**
 * A new record where the key has no row at all, in one statement: `RETURNING` the row when it was inserted, no
 * row when one was there (live, or expired: the upsert then decides).
 */
export const insertNewSql = (table: string): string => `INSERT INTO ${table} ${INSERT_COLUMNS}
  VALUES (?, ?, ?, ?, ?, 0, NULL, ?, ?, ?, ?, ?)
  ON CONFLICT (key) DO NOTHING
  RETURNING ${COLUMNS}`;

/**
 * The whole claim in one statement. Inserts a new record; over an expired one, writes the new record in its place
 * (as `putSql` would: attempts 0, no result); over a pending one whose lease has lapsed and whose fingerprint is
 * this claim's, takes it over: a new token and lease, `expires_at` the later of the two, the rest (attempts, the
 * started mark, and `created_at`) kept, and `purge_from` back to its creation as `putSql` leaves it. Otherwise
 * nothing is written and no row returns. SET's right-hand sides all read the row as it was, so `expired` means the
 * same in each. `excluded.created_at` is the claim's instant.
 */
export const upsertSql = (table: string): string => {
  const expired = `${table}.expires_at <= excluded.created_at`;
  const keepOr = (column: string, fresh: string) =>
    `${column} = CASE WHEN ${expired} THEN ${fresh} ELSE ${table}.${column} END`;
  return `INSERT INTO ${table} ${INSERT_COLUMNS}
  VALUES (?, ?, ?, ?, ?, 0, NULL, ?, ?, ?, ?, ?)
  ON CONFLICT (key) DO UPDATE SET
    ${keepOr("state", "excluded.state")},
    ${keepOr("fingerprint", "excluded.fingerprint")},
    token = excluded.token,
    lease_until = CASE WHEN ${expired} THEN excluded.lease_until ELSE excluded.created_at + ? END,
    ${keepOr("attempts", "0")},
    ${keepOr("result", "NULL")},
    ${keepOr("data", "excluded.data")},
    ${keepOr("created_at", "excluded.created_at")},
    updated_at = excluded.updated_at,
    expires_at = CASE WHEN ${expired} THEN excluded.expires_at
      ELSE max(${table}.expires_at, excluded.expires_at) END,
    purge_from = CASE WHEN ${expired} THEN excluded.purge_from ELSE ${table}.created_at END
  WHERE ${expired} OR (${table}.state = 'pending' AND ${table}.lease_until IS NOT NULL
    AND ${table}.lease_until <= excluded.created_at AND ${table}.fingerprint = excluded.fingerprint)
  RETURNING ${COLUMNS}`;
};

/** The row as it is, expired or not: what the claim's batch reads before its upsert, for `previous`. */
export const selectAnySql = (table: string): string => `SELECT ${COLUMNS} FROM ${table} WHERE key = ?`;

/** The new record a claim at `now` would write, and the values of `insertNewSql` (and `upsertSql`'s VALUES). */
export function newValues(key: string, input: ClaimInput, now: number): SqlValue[] {
  const r = newRecord(key, input, now);
  return [r.key, r.state, r.fingerprint, r.token, r.leaseUntil, r.data, now, now, r.expiresAt, now];
}

/** The claim as one batch: the row as it was, then the upsert. */
export function claimBatch(table: string, key: string, input: ClaimInput, now: number): SqlStatement[] {
  return [
    { sql: selectAnySql(table), args: [key] },
    { sql: upsertSql(table), args: [...newValues(key, input, now), input.leaseMs] },
  ];
}

/** Whether a claim at `now` writes over `record` (expired, or a lapsed lease of the same request). */
export function replaces(record: StoreRecord, input: ClaimInput, now: number): boolean {
  return (
    record.expiresAt <= now ||
    (record.state === "pending" &&
      record.leaseUntil !== null &&
      record.leaseUntil <= now &&
      record.fingerprint === input.fingerprint)
  );
}

/**
 * What a live record that the claim leaves as it is answers: `exists`, or, for this very claim resent (the token
 * that holds it), what its first arrival decided (`resent`). The same answers as `decideClaim`.
 */
export function asIs(record: StoreRecord, input: ClaimInput): ClaimResult {
  if (record.state === "pending" && record.token === input.token) return resent(record);
  return { status: "exists", record };
}

/**
 * The answer of the claim's batch: `before` the row it read, `after` the upsert's row. `undefined` when the two
 * disagree (the row was replaceable but nothing was written), which an atomic batch never gives: the caller sends
 * the batch again.
 */
export function batchAnswer(
  before: SqlRow | undefined,
  after: SqlRow | undefined,
  input: ClaimInput,
  now: number,
): ClaimResult | undefined {
  const previous = before === undefined ? undefined : toRecord(before);
  if (after !== undefined) {
    const record = toRecord(after);
    return previous === undefined || previous.expiresAt <= now
      ? { status: "claimed", record }
      : { status: "taken_over", record, previous };
  }
  if (previous === undefined || replaces(previous, input, now)) return undefined;
  return asIs(previous, input);
}
