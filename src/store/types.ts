/**
 * The one contract every store fulfils: memory, SQLite, PostgreSQL, Redis. The harness ledger and the owner-side
 * middleware both use it, each under its own key namespace. Every method is atomic on its own: a store never
 * needs a check-then-write from its callers.
 */

export const RecordState = {
  /** Claimed by one worker, which holds `token` until `leaseUntil`; renewed while it runs. */
  pending: "pending",
  /** Done; `result` holds the saved outcome. */
  completed: "completed",
  /** Parked until a person approves or denies it; no lease. */
  awaitingApproval: "awaiting_approval",
  /** Approved and not yet claimed to run. */
  approved: "approved",
  /** Denied; `data` says why. */
  denied: "denied",
  /** The call may or may not have taken effect, and nothing may repeat it until someone resolves it. */
  outcomeUnknown: "outcome_unknown",
} as const;
export type RecordState = (typeof RecordState)[keyof typeof RecordState];

export interface StoreRecord {
  key: string;
  state: RecordState;
  /** What the key was claimed for (a hash of the full arguments or the request); same key, other fingerprint: a conflict. */
  fingerprint: string;
  /** The current claimant's secret; only it may complete, renew or release a pending record. */
  token: string | null;
  /** Epoch ms (on the store's clock) until which a pending claim is held; past it the next claim takes over. */
  leaseUntil: number | null;
  /** Caller-managed count (the harness counts attempts of the tool). */
  attempts: number;
  /** JSON text of the saved outcome. */
  result: string | null;
  /** JSON text of the caller's metadata (task, tool, arguments, audit trail). */
  data: string | null;
  createdAt: number;
  updatedAt: number;
  /** Epoch ms after which the record is treated as absent and may be purged. */
  expiresAt: number;
}

export interface ClaimInput {
  fingerprint: string;
  token: string;
  /** Lease of a `pending` claim. */
  leaseMs: number;
  /** Retention of the record from now. */
  ttlMs: number;
  /** The state a new record starts in. @default "pending" */
  state?: typeof RecordState.pending | typeof RecordState.awaitingApproval;
  data?: string | null;
}

export type ClaimResult =
  /** No live record existed (or only an expired one): this caller now holds the key. */
  | { status: "claimed"; record: StoreRecord }
  /** A pending record with the same fingerprint had an expired lease: this caller holds it now, with a new token. */
  | { status: "taken_over"; record: StoreRecord; previous: StoreRecord }
  /** A live record exists; the caller decides what it means (replay, wait, conflict). */
  | { status: "exists"; record: StoreRecord };

/** What an `update` or `delete` requires of the record; every given field must match. */
export interface Expect {
  token?: string;
  state?: RecordState;
}

export interface RecordPatch {
  state?: RecordState;
  token?: string | null;
  /** New lease from now; `null` clears it. */
  leaseMs?: number | null;
  attempts?: number;
  result?: string | null;
  data?: string | null;
  /** New retention from now. */
  ttlMs?: number;
}

export interface ListQuery {
  /** Only keys that start with this. */
  prefix?: string;
  state?: RecordState;
  /** Keys strictly after this one, for paging. */
  after?: string;
  /** @default 100 */
  limit?: number;
}

export interface ChangesQuery {
  /** Only keys that start with this. */
  prefix?: string;
  /** Only records whose `updatedAt` is at or after this (epoch ms, on the store's clock). */
  since: number;
  /** @default 100 */
  limit?: number;
}

export interface Changes {
  /** Live records updated at or after `since`, in key order, at most `limit` (at the limit there may be more). */
  records: StoreRecord[];
  /**
   * How many live records the prefix holds now. A reader that kept every key it saw, added these records and
   * dropped the ones whose `expiresAt` is at or before `now` knows as many keys as this unless one was deleted:
   * `changes` cannot list what is gone, so that reader then lists everything.
   */
  live: number;
  /**
   * The store's clock when it read: a watcher's next `since`, less a margin for writes whose time was taken
   * before they committed.
   */
  now: number;
}

export interface Store {
  /** Atomically create the record, take over an expired pending claim with the same fingerprint, or report what exists. */
  claim(key: string, input: ClaimInput): Promise<ClaimResult>;
  /** The live record, or `undefined` when there is none or it has expired. */
  get(key: string): Promise<StoreRecord | undefined>;
  /** Compare-and-set: applies `patch` only when the live record matches `expect`; returns the new record or `undefined`. */
  update(key: string, expect: Expect, patch: RecordPatch): Promise<StoreRecord | undefined>;
  /** Removes the live record when it matches `expect`. */
  delete(key: string, expect: Expect): Promise<boolean>;
  /** Live records in key order. */
  list(query?: ListQuery): Promise<StoreRecord[]>;
  /**
   * Optional, for watchers such as the inspector: the records changed since a time and the live count, so that a
   * poll reads what changed rather than every record. A store without it is listed in full instead.
   */
  changes?(query: ChangesQuery): Promise<Changes>;
  /** Removes up to `limit` expired records; returns how many. Call it until it returns less than `limit`. */
  purge(options?: { limit?: number }): Promise<number>;
  /** Releases what the store opened itself; a client passed in by the caller stays open. */
  close(): Promise<void>;
}

/**
 * The part of the contract that claiming needs (`claim`, `get`, `update`, `delete`, `close`): what a store that
 * cannot list keys in order (DynamoDB without a single-partition index) can still offer. The contract suite runs its
 * claim part on one (`testStore(name, factory, { list: false, purge: false })`).
 */
export type ClaimStore = Pick<Store, "claim" | "get" | "update" | "delete" | "close">;

export interface StoreOptions {
  /**
   * The clock every expiry and lease is measured with, for tests. Memory and SQLite use the process's clock;
   * PostgreSQL and Redis decide on the server's clock unless this is given.
   * @default Date.now (memory, SQLite); the server's clock (PostgreSQL, Redis)
   */
  clock?: () => number;
}
