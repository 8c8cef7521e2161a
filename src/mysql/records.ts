import type { ClaimInput, StoreRecord } from "../store/types.js";

/*
 * Records as MySQL holds them: every text is bytes (VARBINARY, BLOB), written from and read back into UTF-8 here, so
 * that neither the connection's character set nor a collation (PAD SPACE, case folding) can change a key or a saved
 * result. Times are BIGINT epoch milliseconds.
 */

/** The columns in the order every statement reads and writes them. */
export const COLUMNS =
  "`key`, state, fingerprint, token, lease_until, attempts, result, data, created_at, updated_at, expires_at";

/** The longest key the primary key holds (InnoDB's limit for one index entry). */
export const MAX_KEY_BYTES = 3072;
/** The longest fingerprint or token a BLOB holds. */
export const MAX_BLOB_BYTES = 65_535;

/** A row as mysql2 answers it: bytes as Buffers (or strings, under a `typeCast`), BIGINTs as numbers or strings. */
export interface Row {
  key: unknown;
  state: unknown;
  fingerprint: unknown;
  token: unknown;
  lease_until: unknown;
  attempts: unknown;
  result: unknown;
  data: unknown;
  created_at: unknown;
  updated_at: unknown;
  expires_at: unknown;
  /** The statement's instant, on reads that carry it. */
  now_ms?: unknown;
}

/** A text as bytes for a VARBINARY or BLOB parameter. */
export const bytes = (text: string): Buffer => Buffer.from(text, "utf8");

// mysql2 answers VARBINARY and BLOB columns as Buffers, which are Uint8Arrays.
const utf8 = new TextDecoder();
const text = (value: unknown): string | null =>
  value === null || value === undefined
    ? null
    : value instanceof Uint8Array
      ? utf8.decode(value)
      : String(value);

const int = (value: unknown): number => Number(value);

export function toRecord(row: Row): StoreRecord {
  return {
    key: text(row.key)!,
    state: text(row.state) as StoreRecord["state"],
    fingerprint: text(row.fingerprint)!,
    token: text(row.token),
    leaseUntil: row.lease_until === null ? null : int(row.lease_until),
    attempts: int(row.attempts),
    result: text(row.result),
    data: text(row.data),
    createdAt: int(row.created_at),
    updatedAt: int(row.updated_at),
    expiresAt: int(row.expires_at),
  };
}

/** A record's values in COLUMNS order, as parameters. */
export function recordValues(record: StoreRecord): unknown[] {
  const b = (value: string | null) => (value === null ? null : bytes(value));
  return [
    bytes(record.key),
    record.state,
    bytes(record.fingerprint),
    b(record.token),
    record.leaseUntil,
    record.attempts,
    b(record.result),
    b(record.data),
    record.createdAt,
    record.updatedAt,
    record.expiresAt,
  ];
}

/**
 * Refuses what the table would truncate rather than store: a server without strict mode cuts a long value short
 * with only a warning, and two long keys cut to the same bytes would share a record.
 */
export function checkSizes(key: string, input?: ClaimInput): void {
  const size = Buffer.byteLength(key, "utf8");
  if (size > MAX_KEY_BYTES) {
    throw new TypeError(`mysql store: a key is at most ${MAX_KEY_BYTES} bytes in UTF-8, got ${size}`);
  }
  if (input === undefined) return;
  for (const field of ["fingerprint", "token"] as const) {
    const length = Buffer.byteLength(String(input[field]), "utf8");
    if (length > MAX_BLOB_BYTES) {
      throw new TypeError(`mysql store: input.${field} is at most ${MAX_BLOB_BYTES} bytes, got ${length}`);
    }
  }
}
