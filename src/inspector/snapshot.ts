import { PREFIX, toEntry } from "../harness/ledger.js";
import type { LedgerEntry } from "../harness/types.js";
import { compareKeys, firstAtOrAfter } from "../store/range.js";
import type { Store, StoreRecord } from "../store/types.js";
import { type KeyedId, keyedId, randomSecret } from "./keyed-id.js";

/** One ledger call as the inspector sees it: the parsed entry and who holds its lease. */
export interface Row {
  entry: LedgerEntry;
  /**
   * A short name of the claim holding a pending call (`holderOf` its token, keyed with the inspector's secret):
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

/** Records read per store.list or store.changes call. */
const PAGE = 500;
/** Observations kept per call, latest last. */
const MAX_OBSERVATIONS = 30;
/**
 * How far before the last read a poll asks for changes from. A write's time is taken before it commits (a SQLite
 * write that waited for the lock, a PostgreSQL transaction's start), so one can land behind a read that came after
 * it; the overlap reads those again, and a record read again unchanged costs a comparison.
 */
const SLACK_MS = 5_000;
/**
 * Every record is read again this often even when `changes` is there: it bounds how long a change whose time fell
 * further behind than `SLACK_MS` (a clock stepped back) can go unseen.
 */
const FULL_SCAN_MS = 60_000;

export interface Scanner {
  /** The latest scan if it is at most `maxAgeMs` old, else a new one (concurrent callers share one scan). */
  latest(maxAgeMs: number): Promise<Snapshot>;
  /** Makes the next `latest` read the ledger again, after a change made through the inspector itself. */
  invalidate(): void;
  observations(key: string): readonly Observation[];
}

/** What the scanner last read of one record under the prefix: the record, and its row if it is a ledger call. */
interface Known {
  record: StoreRecord;
  row: Row | undefined;
}

/**
 * Reads the ledger (up to `maxRecords` calls) and remembers what changed between two reads. The first read lists
 * every record; later ones ask the store for the records changed since (`store.changes`), drop the ones past their
 * expiry on the store's clock, and list everything again only when something else went away (the live count
 * differs from the keys known: a deleted record), when more changed than a page holds, when the ledger is past
 * `maxRecords`, once a minute, or on a store without `changes`. A record read again unchanged is compared, not
 * parsed again.
 */
export function scanner(
  store: Store,
  maxRecords: number,
  clock: () => number,
  id: KeyedId = keyedId(randomSecret()),
): Scanner {
  let current: Snapshot | undefined;
  let stale = false;
  let running: Promise<Snapshot> | undefined;
  /** By store key. */
  const known = new Map<string, Known>();
  const observed = new Map<string, Observation[]>();
  /** The known keys in order, kept between reads; `added` holds the keys known since it was last brought up to date. */
  let order: string[] | undefined;
  const added = new Set<string>();
  /** Where the next `changes` starts: the last read's time on the store's clock, less `SLACK_MS`. */
  let since = Number.NEGATIVE_INFINITY;
  /** The newest `updatedAt` a full read saw, where the next `changes` starts after one (no store time there). */
  let newest = Number.NEGATIVE_INFINITY;
  let lastFull = Number.NEGATIVE_INFINITY;
  let truncated = false;

  async function scan(): Promise<Snapshot> {
    const changed: string[] = [];
    let dirty = current === undefined;
    let full = true;
    let asked = false;
    if (
      store.changes !== undefined &&
      current !== undefined &&
      !truncated &&
      clock() - lastFull < FULL_SCAN_MS
    ) {
      const { records, live, now } = await store.changes({ prefix: PREFIX, since, limit: PAGE });
      // Even when the records are too many and everything is listed below: that read covers the ones before now.
      since = now - SLACK_MS;
      asked = true;
      if (records.length < PAGE) {
        for (const record of records) dirty = absorb(record, changed) || dirty;
        // Past its expiry on the store's clock a record is gone, as the store counts it: no full read for that.
        for (const [key, { record }] of known)
          if (record.expiresAt <= now) dirty = forget(key, changed) || dirty;
        // Equal counts: nothing else went away, since every key not known before was among the records changed.
        full = live !== known.size;
      }
    }
    if (full) dirty = (await listAll(changed)) || dirty;
    if (!asked) since = newest - SLACK_MS;
    // Unchanged: the same version, read again now (its age decides when `latest` reads again).
    current = dirty ? build(changed) : { ...current!, at: clock(), changed: [] };
    return current;
  }

  /** Reads every record, in pages; forgets the ones that went away. Returns whether anything changed. */
  async function listAll(changed: string[]): Promise<boolean> {
    let dirty = false;
    const read = new Set<string>();
    let after: string | undefined;
    const wasTruncated = truncated;
    truncated = false;
    newest = Number.NEGATIVE_INFINITY;
    for (;;) {
      const limit = Math.min(PAGE, maxRecords - read.size + 1);
      const page = await store.list({ prefix: PREFIX, limit, ...(after === undefined ? {} : { after }) });
      for (const record of page) {
        if (read.size === maxRecords) {
          truncated = true;
          break;
        }
        read.add(record.key);
        dirty = absorb(record, changed) || dirty;
      }
      if (truncated || page.length < limit) break;
      after = page[page.length - 1]!.key;
    }
    for (const key of known.keys()) if (!read.has(key)) dirty = forget(key, changed) || dirty;
    lastFull = clock();
    return dirty || truncated !== wasTruncated;
  }

  /** Drops a record that went away. */
  function forget(key: string, changed: string[]): boolean {
    const row = known.get(key)?.row;
    known.delete(key);
    const at = order === undefined ? -1 : firstAtOrAfter(order, key);
    if (order?.[at] === key) order.splice(at, 1);
    added.delete(key);
    if (row !== undefined) {
      observed.delete(row.entry.key);
      changed.push(row.entry.key);
    }
    return true;
  }

  /** Takes in one record as read now; records observations and the changed key. Returns whether it changed. */
  function absorb(record: StoreRecord, changed: string[]): boolean {
    newest = Math.max(newest, record.updatedAt);
    const before = known.get(record.key);
    if (before !== undefined && sameRecord(before.record, record)) return false;
    const row = toRow(record, id);
    if (before === undefined) added.add(record.key);
    known.set(record.key, { record, row });
    const key = row?.entry.key ?? before?.row?.entry.key;
    if (key !== undefined) changed.push(key);
    if (row === undefined || before?.row === undefined) return true;
    const was = before.row.entry;
    const is = row.entry;
    if (was.createdAt !== is.createdAt) {
      // Expired and claimed anew: another call's history.
      observed.delete(key!);
      return true;
    }
    const notes: Observation[] = [];
    if (was.state === "pending" && is.state === "pending" && before.row.holder !== row.holder) {
      notes.push({ type: "taken_over", at: is.updatedAt, from: before.row.holder, to: row.holder });
    }
    if (is.attempts > was.attempts) notes.push({ type: "attempts", at: is.updatedAt, attempts: is.attempts });
    if (is.state !== was.state)
      notes.push({ type: "state", at: is.updatedAt, from: was.state, to: is.state });
    if (notes.length > 0) {
      const list = [...(observed.get(key!) ?? []), ...notes];
      observed.set(key!, list.length > MAX_OBSERVATIONS ? list.slice(-MAX_OBSERVATIONS) : list);
    }
    return true;
  }

  function build(changed: string[]): Snapshot {
    const rows: Row[] = [];
    let unreadable = 0;
    if (order === undefined) order = [...known.keys()].sort(compareKeys);
    else {
      // A few calls new since the last read: put them in place rather than sort ten thousand keys again.
      for (const key of added) order.splice(firstAtOrAfter(order, key), 0, key);
    }
    added.clear();
    for (const key of order) {
      const { row } = known.get(key)!;
      if (row === undefined) unreadable++;
      else rows.push(row);
    }
    const version = (current?.version ?? 0) + 1;
    return { at: clock(), version, rows, unreadable, truncated, changed };
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
export function toRow(record: StoreRecord, id: KeyedId): Row | undefined {
  try {
    const entry = toEntry(record);
    return { entry, holder: entry.state === "pending" ? holderOf(record.token, id) : null };
  } catch {
    return undefined;
  }
}

/** A claim's short public name (its token is the claim's secret): 8 hex digits of the token, keyed (`KeyedId`). */
export function holderOf(token: string | null, id: KeyedId): string | null {
  return token === null ? null : id(token, 8);
}

function sameRecord(a: StoreRecord, b: StoreRecord): boolean {
  return (
    a.updatedAt === b.updatedAt &&
    a.state === b.state &&
    a.attempts === b.attempts &&
    a.token === b.token &&
    a.leaseUntil === b.leaseUntil &&
    a.expiresAt === b.expiresAt &&
    a.createdAt === b.createdAt &&
    a.fingerprint === b.fingerprint &&
    a.data === b.data &&
    a.result === b.result
  );
}
