import { applyPatch, matches, newRecord } from "./record.js";
import type {
  ClaimInput,
  ClaimResult,
  Expect,
  ListQuery,
  RecordPatch,
  Store,
  StoreOptions,
  StoreRecord,
} from "./types.js";

export type MemoryStoreOptions = StoreOptions;

/**
 * A store in this process's memory: the default, for tests and for a single process where a restart may forget.
 * It dedupes concurrent calls in one process, but a crash loses it, so pair it with an owner that honours the key.
 */
export function memoryStore(options: MemoryStoreOptions = {}): Store {
  const clock = options.clock ?? Date.now;
  const records = new Map<string, StoreRecord>();

  const live = (key: string, now: number): StoreRecord | undefined => {
    const record = records.get(key);
    return record && record.expiresAt > now ? record : undefined;
  };

  return {
    async claim(key: string, input: ClaimInput): Promise<ClaimResult> {
      const now = clock();
      const existing = live(key, now);
      if (!existing) {
        const record = newRecord(key, input, now);
        records.set(key, record);
        return { status: "claimed", record: { ...record } };
      }
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
        records.set(key, record);
        return { status: "taken_over", record: { ...record }, previous: { ...existing } };
      }
      return { status: "exists", record: { ...existing } };
    },
    async get(key: string) {
      const record = live(key, clock());
      return record && { ...record };
    },
    async update(key: string, expect: Expect, patch: RecordPatch) {
      const now = clock();
      const existing = live(key, now);
      if (!existing || !matches(existing, expect)) return undefined;
      const record = applyPatch(existing, patch, now);
      records.set(key, record);
      return { ...record };
    },
    async delete(key: string, expect: Expect) {
      const existing = live(key, clock());
      if (!existing || !matches(existing, expect)) return false;
      return records.delete(key);
    },
    async list(query: ListQuery = {}) {
      const now = clock();
      const limit = query.limit ?? 100;
      const out: StoreRecord[] = [];
      for (const key of [...records.keys()].sort()) {
        if (out.length >= limit) break;
        if (query.after !== undefined && key <= query.after) continue;
        if (query.prefix !== undefined && !key.startsWith(query.prefix)) continue;
        const record = live(key, now);
        if (record && (query.state === undefined || record.state === query.state)) out.push({ ...record });
      }
      return out;
    },
    async purge({ limit = 1000 } = {}) {
      const now = clock();
      let removed = 0;
      for (const [key, record] of records) {
        if (removed >= limit) break;
        if (record.expiresAt <= now) {
          records.delete(key);
          removed++;
        }
      }
      return removed;
    },
    async close() {
      records.clear();
    },
  };
}
