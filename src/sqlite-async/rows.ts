import type { RecordState, StoreRecord } from "../store/types.js";
import type { SqlRow } from "./connection.js";

/** An integer column as a number, whatever form the driver gave it in (number, bigint, decimal string). */
export function int(value: unknown): number {
  return typeof value === "number" ? value : Number(value);
}

const orNull = <T>(value: unknown, read: (v: unknown) => T): T | null =>
  value === null || value === undefined ? null : read(value);

/** A row of `COLUMNS` (src/sqlite/table.ts) as a record, with the same values `sqliteStore` hands out. */
export function toRecord(row: SqlRow): StoreRecord {
  return {
    key: String(row.key),
    state: row.state as RecordState,
    fingerprint: String(row.fingerprint),
    token: orNull(row.token, String),
    leaseUntil: orNull(row.leaseUntil, int),
    attempts: int(row.attempts),
    result: orNull(row.result, String),
    data: orNull(row.data, String),
    createdAt: int(row.createdAt),
    updatedAt: int(row.updatedAt),
    expiresAt: int(row.expiresAt),
  };
}

/** The integer columns of a partial row (an update's `RETURNING`) as numbers, the others as given. */
export function numbers(row: SqlRow): Partial<StoreRecord> {
  const out: Record<string, unknown> = { ...row };
  for (const name of ["leaseUntil", "attempts", "createdAt", "expiresAt"]) {
    if (out[name] !== undefined && out[name] !== null) out[name] = int(out[name]);
  }
  return out as Partial<StoreRecord>;
}
