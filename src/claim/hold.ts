import type { RecordPatch, StoreRecord } from "../store/types.js";
import { nextTurnTimer } from "./timer.js";
import type { ClaimSpec, Hold, Pause, Schedule } from "./types.js";

type SaveOptions = { onRetry?: (error: unknown) => void };

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
    for (;;) {
      try {
        const saved = await this.store.update(this.key, this.expect, patch);
        this.stop();
        // A try that failed may still have been applied (its reply was lost): then this one finds the record no
        // longer pending under the token, and the first try's outcome is the answer, not a lost claim.
        if (!saved && failed) return appliedAlready(await this.store.get(this.key), patch);
        return saved;
      } catch (error) {
        failed = true;
        if (waited >= budgetMs) {
          // Left pending and locked: a later claim takes it over only as a takeover, which never re-runs blindly.
          this.stop();
          throw error;
        }
        options.onRetry?.(error);
        const ms = Math.min(delay, budgetMs - waited);
        await (this.spec.pause ?? defaultPause)(ms);
        waited += ms;
        delay = Math.min(delay * 2, Math.max(FIRST_BACKOFF_MS, this.leaseMs / 3));
      }
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
