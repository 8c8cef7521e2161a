import type { Expect, RecordPatch, StoreRecord } from "../store/types.js";
import { nextTurnTimer } from "./timer.js";
import type { ClaimSpec, Hold, Pause, SaveOptions, Schedule } from "./types.js";

/** Why a save pauses without a store error: a taker holds the record and has not recorded it unknown yet. */
const TAKER_BUSY = Symbol("taker busy");

// A renewal timer must not keep a process alive that is otherwise done.
const unrefSchedule: Schedule = nextTurnTimer({ unref: true });

const defaultPause: Pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The first wait between two tries of a must-happen write; it doubles up to a third of the lease. */
const FIRST_BACKOFF_MS = 50;

/**
 * Holds a pending record under `token`: renews it (step 2, "renew": one conditional `update` moving `leaseUntil` and
 * `expiresAt`) every third of the lease until stopped, and performs the holder's writes under the token.
 */
export function holdClaim(spec: ClaimSpec, token: string): Hold {
  return new Held(spec, token);
}

/**
 * One object per call and its methods on the prototype: a hold is made for every call on the fast path, and a
 * factory's six closures and a getter cost it 2-3 µs (more under tsx, which wraps each closure in `__name`).
 */
class Held implements Hold {
  readonly token: string;
  private readonly store: ClaimSpec["store"];
  private readonly key: string;
  private readonly leaseMs: number;
  // Retention counted past the lease: a pending record must not expire under a live one (issue 11, case 4), nor
  // with it, or a holder stalled past its lease would leave no record and the next claim would run the tool afresh.
  private readonly ttlMs: number;
  private readonly expect: { token: string; state: "pending" };
  private readonly spec: ClaimSpec;
  private readonly schedule: Schedule;
  // Made only when someone reads `lost`: an AbortController per call is measurable on the fast path.
  private lostController: AbortController | undefined = undefined;
  private lostReason: Error | undefined = undefined;
  private stopped = false;
  private cancel: () => void;

  constructor(spec: ClaimSpec, token: string) {
    this.token = token;
    this.spec = spec;
    this.store = spec.store;
    this.key = spec.key;
    this.leaseMs = spec.leaseMs;
    this.ttlMs = spec.leaseMs + spec.ttlMs;
    this.expect = { token, state: "pending" };
    this.schedule = spec.schedule ?? unrefSchedule;
    this.cancel = this.schedule(this.leaseMs / 3, () => this.renew());
  }

  get lost(): AbortSignal {
    return this.lostOnce().signal;
  }

  private lostOnce(): AbortController {
    if (this.lostController === undefined) {
      this.lostController = new AbortController();
      if (this.lostReason !== undefined) this.lostController.abort(this.lostReason);
    }
    return this.lostController;
  }

  private lose(): void {
    if (this.lostReason !== undefined) return;
    this.lostReason = new Error("the claim was taken over");
    this.lostController?.abort(this.lostReason);
    this.spec.onLost?.();
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    try {
      // Step "renew": update(key, {token, pending}, {leaseMs, ttlMs}).
      const renewed = await this.store.update(this.key, this.expect, {
        leaseMs: this.leaseMs,
        ttlMs: this.ttlMs,
      });
      if (!renewed) {
        if (!this.stopped) this.lose();
        return;
      }
    } catch (error) {
      // The store is down: the next renewal may still come before the lease runs out.
      this.spec.onRenewError?.(error);
    }
    if (!this.stopped) this.cancel = this.schedule(this.leaseMs / 3, () => this.renew());
  }

  stop(): void {
    this.stopped = true;
    this.cancel();
  }

  write(patch: RecordPatch): Promise<StoreRecord | undefined> {
    return this.store.update(this.key, this.expect, patch);
  }

  async save(patch: RecordPatch, options: SaveOptions = {}): Promise<StoreRecord | undefined> {
    // Step "complete", the save-retry rule: retried while renewal goes on, up to the budget.
    const budgetMs = this.spec.saveBudgetMs ?? 2 * this.leaseMs;
    let waited = 0;
    let delay = FIRST_BACKOFF_MS;
    let failed = false;
    // What a try writes, and under what: the completion under this claim; once the claim is lost to a taker that
    // recorded the outcome unknown under this token, the same completion over that record (a late save).
    let expect: Expect = this.expect;
    let write = patch;
    for (;;) {
      let why: unknown = TAKER_BUSY;
      try {
        const saved = await this.store.update(this.key, expect, write);
        this.stop();
        if (saved) return saved;
        if (!failed && options.late === undefined) return undefined;
        const now = await this.store.get(this.key);
        // A try that failed may still have been applied (its reply was lost): then this one finds the record no
        // longer as expected, and the first try's outcome is the answer, not a lost claim.
        const applied = failed ? appliedAlready(now, write) : undefined;
        if (applied !== undefined || options.late === undefined || now === undefined) return applied;
        if (now.state === "outcome_unknown" && now.token === this.token) {
          // Tried once already: the record did not move, so nothing will (its expiry, say); no loop without a pause.
          if (expect !== this.expect) return undefined;
          // Fenced as every holder's write is: only the claim whose token the taker kept matches.
          expect = { token: this.token, state: "outcome_unknown" };
          write = { ...patch, data: options.late(now) };
          continue;
        }
        // A taker that has not recorded the outcome unknown yet (its claim and its mark are two writes): wait for it.
        if (now.state !== "pending" || now.fingerprint !== this.spec.fingerprint) return undefined;
      } catch (error) {
        failed = true;
        why = error;
      }
      if (waited >= budgetMs) {
        // Left pending and locked: a later claim takes it over only as a takeover, which never re-runs blindly.
        this.stop();
        if (why === TAKER_BUSY) return undefined;
        throw why;
      }
      options.onRetry?.(why === TAKER_BUSY ? undefined : why);
      const ms = Math.min(delay, budgetMs - waited);
      await (this.spec.pause ?? defaultPause)(ms);
      waited += ms;
      delay = Math.min(delay * 2, Math.max(FIRST_BACKOFF_MS, this.leaseMs / 3));
    }
  }

  release(): Promise<boolean> {
    this.stop();
    // Step "release": delete(key, {token, pending}).
    return this.store.delete(this.key, this.expect);
  }
}

/** The live record when it is what `patch` would have made of it, else `undefined` (another writer's record). */
function appliedAlready(record: StoreRecord | undefined, patch: RecordPatch): StoreRecord | undefined {
  if (!record) return undefined;
  const same =
    (patch.state === undefined || record.state === patch.state) &&
    (patch.token === undefined || record.token === patch.token) &&
    (patch.result === undefined || record.result === patch.result) &&
    (patch.data === undefined || record.data === patch.data);
  return same ? record : undefined;
}
