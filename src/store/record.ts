import type { ClaimInput, Expect, RecordPatch, StoreRecord } from "./types.js";

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
