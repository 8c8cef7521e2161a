import type { ClaimInput, ClaimResult, Expect, RecordPatch, StoreRecord } from "./types.js";

/** Shared by the stores that keep records as objects; SQL and Lua stores express the same rules in their language. */
export function newRecord(key: string, input: ClaimInput, now: number): StoreRecord {
  const state = input.state ?? "pending";
  return {
    key,
    state,
    fingerprint: input.fingerprint,
    token: input.token,
    leaseUntil: state === "pending" ? now + input.leaseMs : null,
    attempts: 0,
    result: null,
    data: input.data ?? null,
    createdAt: now,
    updatedAt: now,
    expiresAt: now + input.ttlMs,
  };
}

export function matches(record: StoreRecord, expect: Expect): boolean {
  return (
    (expect.token === undefined || record.token === expect.token) &&
    (expect.state === undefined || record.state === expect.state)
  );
}

export function applyPatch(record: StoreRecord, patch: RecordPatch, now: number): StoreRecord {
  return {
    ...record,
    state: patch.state ?? record.state,
    token: patch.token !== undefined ? patch.token : record.token,
    leaseUntil:
      patch.leaseMs === undefined ? record.leaseUntil : patch.leaseMs === null ? null : now + patch.leaseMs,
    attempts: patch.attempts ?? record.attempts,
    result: patch.result !== undefined ? patch.result : record.result,
    data: patch.data !== undefined ? patch.data : record.data,
    updatedAt: now,
    expiresAt: patch.ttlMs !== undefined ? now + patch.ttlMs : record.expiresAt,
  };
}

/**
 * What a claim on `key` does, given the live record (or none): the one rule every store applies, in its own
 * transaction. A store that keeps records as objects writes `record` back unless the status is `exists`.
 */
export function decideClaim(
  key: string,
  existing: StoreRecord | undefined,
  input: ClaimInput,
  now: number,
): ClaimResult {
  if (!existing) return { status: "claimed", record: newRecord(key, input, now) };
  if (
    existing.state === "pending" &&
    existing.leaseUntil !== null &&
    existing.leaseUntil <= now &&
    existing.fingerprint === input.fingerprint
  ) {
    const record: StoreRecord = {
      ...existing,
      token: input.token,
      leaseUntil: now + input.leaseMs,
      updatedAt: now,
      expiresAt: Math.max(existing.expiresAt, now + input.ttlMs),
    };
    return { status: "taken_over", record, previous: existing };
  }
  if (existing.state === "pending" && existing.token === input.token) return resent(existing);
  return { status: "exists", record: existing };
}

/**
 * The resend rule (docs/claim-protocol.md): a claim that arrives again with the token that already holds the
 * pending record (a client resending a command whose reply it lost) answers what the first arrival decided, read
 * from the record: untouched since its creation, the first arrival created it; otherwise it took the record over
 * (a takeover always moves `updatedAt` past `createdAt`) or its holder has written since, and `previous` is the
 * record as it stands, whose `attempts` is the started mark. Never a fresh claim of a record that may have started.
 */
export function resent(existing: StoreRecord): ClaimResult {
  return existing.createdAt === existing.updatedAt
    ? { status: "claimed", record: existing }
    : { status: "taken_over", record: existing, previous: existing };
}
