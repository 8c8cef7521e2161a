import { createHash } from "node:crypto";
import { PREFIX, toEntry } from "../harness/ledger.js";
import type { LedgerEntry } from "../harness/types.js";
import type { Store, StoreRecord } from "../store/types.js";

/** One ledger call as the inspector sees it: the parsed entry and who holds its lease. */
export interface Row {
  entry: LedgerEntry;
  /**
   * A short, stable name of the claim holding a pending call (the first hex digits of the SHA-256 of its token):
   * tells holders apart, and shows a takeover, without revealing the token itself. `null` when nothing holds it.
   */
  holder: string | null;
}

/**
 * What the inspector saw change between two of its scans, which the ledger itself does not keep: a lease taken
 * over by another claim, attempts counted, a state left. Times are the record's `updatedAt` when it changed.
 */
export type Observation =
  | { type: "taken_over"; at: number; from: string | null; to: string | null }
  | { type: "attempts"; at: number; attempts: number }
  | { type: "state"; at: number; from: string; to: string };

export interface Snapshot {
  /** When the scan finished (epoch ms). */
  at: number;
  /** Bumped whenever a scan differs from the one before. */
  version: number;
  rows: Row[];
  /** Records under the ledger's prefix that are not idemkey ledger records. */
  unreadable: number;
  /** The ledger holds more than `maxRecords` live calls; only the first ones (in key order) are shown. */
  truncated: boolean;
  /** Keys whose record changed since the previous scan (appeared, changed or went away). */
  changed: string[];
}

/** Records read per store.list call. */
const PAGE = 500;
/** Observations kept per call, latest last. */
const MAX_OBSERVATIONS = 30;

export interface Scanner {
  /** The latest scan if it is at most `maxAgeMs` old, else a new one (concurrent callers share one scan). */
  latest(maxAgeMs: number): Promise<Snapshot>;
  /** Makes the next `latest` read the ledger again, after a change made through the inspector itself. */
  invalidate(): void;
  observations(key: string): readonly Observation[];
}

/** Reads the whole ledger (up to `maxRecords` calls) and remembers what changed between two reads. */
export function scanner(store: Store, maxRecords: number, clock: () => number): Scanner {
  let current: Snapshot | undefined;
  let stale = false;
  let running: Promise<Snapshot> | undefined;
  const seen = new Map<string, { signature: string; row: Row }>();
  const observed = new Map<string, Observation[]>();

  async function scan(): Promise<Snapshot> {
    const rows: Row[] = [];
    let unreadable = 0;
    let after: string | undefined;
    let truncated = false;
    for (;;) {
      const limit = Math.min(PAGE, maxRecords - rows.length - unreadable + 1);
      const page = await store.list({ prefix: PREFIX, limit, ...(after === undefined ? {} : { after }) });
      for (const record of page) {
        if (rows.length + unreadable === maxRecords) {
          truncated = true;
          break;
        }
        const row = toRow(record);
        if (row === undefined) unreadable++;
        else rows.push(row);
      }
      if (truncated || page.length < limit) break;
      after = page[page.length - 1]!.key;
    }
    const changed = diff(rows);
    const version = (current?.version ?? 0) + (changed.length > 0 || current === undefined ? 1 : 0);
    current = { at: clock(), version, rows, unreadable, truncated, changed };
    return current;
  }

  /** Compares with the previous scan, records observations, and returns the keys that changed. */
  function diff(rows: Row[]): string[] {
    const changed: string[] = [];
    const live = new Set<string>();
    for (const row of rows) {
      const { key } = row.entry;
      live.add(key);
      const signature = signatureOf(row);
      const before = seen.get(key);
      if (before?.signature === signature) continue;
      changed.push(key);
      seen.set(key, { signature, row });
      if (before === undefined) continue;
      const was = before.row.entry;
      const is = row.entry;
      if (was.createdAt !== is.createdAt) {
        // Expired and claimed anew: another call's history.
        observed.delete(key);
        continue;
      }
      const notes: Observation[] = [];
      if (was.state === "pending" && is.state === "pending" && before.row.holder !== row.holder) {
        notes.push({ type: "taken_over", at: is.updatedAt, from: before.row.holder, to: row.holder });
      }
      if (is.attempts > was.attempts)
        notes.push({ type: "attempts", at: is.updatedAt, attempts: is.attempts });
      if (is.state !== was.state)
        notes.push({ type: "state", at: is.updatedAt, from: was.state, to: is.state });
      if (notes.length > 0) {
        const list = [...(observed.get(key) ?? []), ...notes];
        observed.set(key, list.length > MAX_OBSERVATIONS ? list.slice(-MAX_OBSERVATIONS) : list);
      }
    }
    for (const key of seen.keys()) {
      if (live.has(key)) continue;
      seen.delete(key);
      observed.delete(key);
      changed.push(key);
    }
    return changed;
  }

  return {
    latest(maxAgeMs) {
      if (current !== undefined && !stale && clock() - current.at <= maxAgeMs)
        return Promise.resolve(current);
      if (running !== undefined && !stale) return running;
      stale = false;
      // After an invalidation, a scan already running may predate the change: queue a new one behind it, so that
      // scans (and their observations) still happen one after another.
      const next: Promise<Snapshot> = (running ?? Promise.resolve())
        .catch(() => {})
        .then(scan)
        .finally(() => {
          if (running === next) running = undefined;
        });
      running = next;
      return next;
    },
    invalidate() {
      stale = true;
    },
    observations: (key) => observed.get(key) ?? [],
  };
}

/** A ledger record as a row, or `undefined` for a record under the prefix that idemkey did not write. */
export function toRow(record: StoreRecord): Row | undefined {
  try {
    const entry = toEntry(record);
    return { entry, holder: entry.state === "pending" ? holderOf(record.token) : null };
  } catch {
    return undefined;
  }
}

function holderOf(token: string | null): string | null {
  return token === null ? null : createHash("sha256").update(token).digest("hex").slice(0, 8);
}

function signatureOf({ entry, holder }: Row): string {
  return `${entry.state}|${entry.attempts}|${entry.updatedAt}|${entry.leaseUntil}|${holder}|${entry.events.length}`;
}
