import type { ClaimInput, RecordPatch, Store, StoreRecord } from "../store/types.js";

/** Calls `fn` after `ms` milliseconds unless the returned function is called first. */
export type Schedule = (ms: number, fn: () => void) => () => void;
/** Waits `ms` milliseconds. */
export type Pause = (ms: number) => Promise<void>;

/** What one caller claims a key with: the harness, the middleware and MCP each fill it from their options. */
export interface ClaimSpec {
  store: Store;
  /** The store key (already under the caller's namespace). */
  key: string;
  fingerprint: string;
  leaseMs: number;
  /** Retention from the last write; while the claim is pending, counted from the end of its lease. */
  ttlMs: number;
  state?: ClaimInput["state"];
  data?: string | null;
  /** The renewal timer. @default an unref'd setTimeout */
  schedule?: Schedule;
  /** The wait between two tries of a must-happen write. @default a setTimeout-based pause */
  pause?: Pause;
  /**
   * How long, in milliseconds of pauses, a must-happen write (the completion) is retried on store errors before the
   * holder gives up. @default 2 × leaseMs, so that an outage of a whole lease is ridden out
   */
  saveBudgetMs?: number;
  /** Told of each renewal that failed with an error (the store was down); the claim may still be held. */
  onRenewError?: (error: unknown) => void;
  /**
   * Told once when a renewal finds the record no longer held under this token (taken over after a stall), as the
   * hold's `lost` signal aborts. Cheaper than listening on `lost`, which makes an AbortController per claim.
   */
  onLost?: () => void;
}

/** How a hold's `save` goes on when a try fails or finds the claim lost. */
export interface SaveOptions {
  /**
   * Told before each pause between two tries: with the store error that failed the try, or `undefined` while a
   * late save waits for a taker to record the outcome unknown.
   */
  onRetry?: (error: unknown) => void;
  /**
   * Settles the outcome a taker gave up on (the late save). When the claim was lost to a taker that did not run the
   * work again but recorded it `outcome_unknown` keeping this hold's token (`unknownAfterTakeover`), the save lands
   * over that record after all, under `update(key, {token, outcome_unknown}, patch)`: the token is the proof that
   * this is the attempt that ran, so no other attempt's save can settle it. Returns the record's new `data` (its
   * audit trail with the late completion), given the unknown record. While the taker still holds the record pending
   * (its claim and its mark are two writes), the save waits for it within the budget. Leave it out where a taker
   * runs the work again (`rerunAfterTakeover`), or where nothing may settle an unknown outcome but a person.
   * @default undefined: a lost claim ends the save
   */
  late?: (unknown: StoreRecord) => string | null;
}

/** The hold a caller has on a pending record, from its claim to its completion or release. */
export interface Hold {
  readonly token: string;
  /** Aborts when a renewal finds the record no longer held by this token (taken over after a stall). */
  readonly lost: AbortSignal;
  /** A compare-and-set under this token and `pending` (a mark, a state change); `undefined` when the claim is gone. */
  write(patch: RecordPatch): Promise<StoreRecord | undefined>;
  /**
   * The write that must happen (the completion, the saved response): retried with backoff on store errors while the
   * lease is renewed, up to `saveBudgetMs`. Resolves with the record, or `undefined` when the claim was lost (and,
   * with `late`, could not be settled late); rejects with the last store error once the budget is spent, leaving the
   * record pending (locked) and renewal stopped.
   */
  save(patch: RecordPatch, options?: SaveOptions): Promise<StoreRecord | undefined>;
  /**
   * Deletes the record (a final failure that had no effect) and stops renewing. A store error is thrown: the claim
   * then lapses with its lease, and the next claim takes it over.
   */
  release(): Promise<boolean>;
  /** Stops renewing; the record stays as it is. */
  stop(): void;
}

export type Claim =
  /** This caller holds the key: a new record, or a pending one taken over (then `previous` is what it was). */
  | { status: "held"; hold: Hold; record: StoreRecord; previous: StoreRecord | undefined }
  /** A live record exists that this caller does not hold. */
  | { status: "exists"; record: StoreRecord };
