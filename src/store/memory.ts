import { compareKeys, firstAtOrAfter } from "./range.js";
import { applyPatch, decideClaim, matches } from "./record.js";
import type {
  Changes,
  ChangesQuery,
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
  /**
   * The keys in the stores' order (code points, `compareKeys`), kept between pages (sorting them per page made
   * paging through n records O(n² log n)).
   */
  let sorted: string[] | undefined;
  const sortedKeys = () => (sorted ??= [...records.keys()].sort(compareKeys));

  const live = (key: string, now: number): StoreRecord | undefined => {
    const record = records.get(key);
    return record && record.expiresAt > now ? record : undefined;
  };

  return {
    async claim(key: string, input: ClaimInput): Promise<ClaimResult> {
      const now = clock();
      // One lookup: whether the key is in the map at all (an expired record is) decides the sorted keys' fate.
      const stored = records.get(key);
      const decision = decideClaim(key, stored && stored.expiresAt > now ? stored : undefined, input, now);
      if (decision.status === "exists") return { status: "exists", record: { ...decision.record } };
      if (stored === undefined) sorted = undefined;
      records.set(key, decision.record);
      // Copies, so that a caller mutating what it got cannot change the stored record.
      return decision.status === "claimed"
        ? { status: "claimed", record: { ...decision.record } }
        : { status: "taken_over", record: { ...decision.record }, previous: { ...decision.previous } };
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
      sorted = undefined;
      return records.delete(key);
    },
    async list(query: ListQuery = {}) {
      const now = clock();
      const limit = query.limit ?? 100;
      const { prefix, after } = query;
      const keys = sortedKeys();
      // Start at the later of the two lower bounds, found by bisection; stop once past the prefix.
      const from =
        after !== undefined && (prefix === undefined || compareKeys(after, prefix) >= 0) ? after : prefix;
      const out: StoreRecord[] = [];
      let i = from === undefined ? 0 : firstAtOrAfter(keys, from);
      // Only the first key can be `after` itself (the bound is exclusive): one comparison, not one per key, which
      // made a page after a bound cost 2.5x the first page.
      if (after !== undefined && from === after && keys[i] === after) i++;
      for (; i < keys.length; i++) {
        if (out.length >= limit) break;
        const key = keys[i]!;
        if (prefix !== undefined && !key.startsWith(prefix)) {
          if (compareKeys(key, prefix) > 0) break;
          continue;
        }
        const record = live(key, now);
        if (record && (query.state === undefined || record.state === query.state)) out.push({ ...record });
      }
      return out;
    },
    async changes(query: ChangesQuery): Promise<Changes> {
      const now = clock();
      const limit = query.limit ?? 100;
      const { prefix = "", since } = query;
      const keys = sortedKeys();
      const out: StoreRecord[] = [];
      let count = 0;
      for (let i = firstAtOrAfter(keys, prefix); i < keys.length; i++) {
        const key = keys[i]!;
        if (!key.startsWith(prefix)) break;
        const record = live(key, now);
        if (record === undefined) continue;
        count++;
        if (record.updatedAt >= since && out.length < limit) out.push({ ...record });
      }
      return { records: out, live: count, now };
    },
    async purge({ limit = 1000 } = {}) {
      const now = clock();
      let removed = 0;
      for (const [key, record] of records) {
        if (removed >= limit) break;
        if (record.expiresAt <= now) {
          records.delete(key);
          sorted = undefined;
          removed++;
        }
      }
      return removed;
    },
    async close() {
      records.clear();
      sorted = undefined;
    },
  };
}
