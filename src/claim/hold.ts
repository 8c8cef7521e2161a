import type { RecordPatch, StoreRecord } from "../store/types.js";
import type { ClaimSpec, Hold, Pause, Schedule } from "./types.js";

type SaveOptions = { onRetry?: (error: unknown) => void };

const unrefSchedule: Schedule = (ms, fn) => {
  const timer = setTimeout(fn, ms);
  // A renewal timer must not keep a process alive that is otherwise done.
  timer.unref?.();
  return () => clearTimeout(timer);
};

const defaultPause: Pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The first wait between two tries of a must-happen write; it doubles up to a third of the lease. */
const FIRST_BACKOFF_MS = 50;

/**
 * Holds a pending record under `token`: renews it (step 2, "renew": one conditional `update` moving `leaseUntil` and
 * `expiresAt`) every third of the lease until stopped, and performs the holder's writes under the token.
 */
export function holdClaim(spec: ClaimSpec, token: string): Hold {
  const { store, key, leaseMs } = spec;
  const schedule = spec.schedule ?? unrefSchedule;
  const pause = spec.pause ?? defaultPause;
  const budgetMs = spec.saveBudgetMs ?? 2 * leaseMs;
  // Retention counted past the lease: a pending record must not expire under a live one (issue 11, case 4), nor
  // with it, or a holder stalled past its lease would leave no record and the next claim would run the tool afresh.
  const ttlMs = leaseMs + spec.ttlMs;
  const expect = { token, state: "pending" } as const;
  // Made only when someone listens or the claim is lost: an AbortController per call is measurable on the fast path.
  let lostController: AbortController | undefined;
  const lostSignal = () => {
    lostController ??= new AbortController();
    return lostController;
  };
  let stopped = false;

  const renew = async () => {
    if (stopped) return;
    try {
      // Step "renew": update(key, {token, pending}, {leaseMs, ttlMs}).
      const renewed = await store.update(key, expect, { leaseMs, ttlMs });
      if (!renewed) {
        if (!stopped) lostSignal().abort(new Error("the claim was taken over"));
        return;
      }
    } catch (error) {
      // The store is down: the next renewal may still come before the lease runs out.
      spec.onRenewError?.(error);
    }
    if (!stopped) cancel = schedule(leaseMs / 3, renew);
  };
  let cancel = schedule(leaseMs / 3, renew);

  const stop = () => {
    stopped = true;
    cancel();
  };

  return {
    token,
    get lost() {
      return lostSignal().signal;
    },
    write: (patch) => store.update(key, expect, patch),
    async save(patch: RecordPatch, options: SaveOptions = {}) {
      // Step "complete", the save-retry rule: retried while renewal goes on, up to the budget.
      let waited = 0;
      let delay = FIRST_BACKOFF_MS;
      let failed = false;
      for (;;) {
        try {
          const saved = await store.update(key, expect, patch);
          stop();
          // A try that failed may still have been applied (its reply was lost): then this one finds the record no
          // longer pending under the token, and the first try's outcome is the answer, not a lost claim.
          if (!saved && failed) return appliedAlready(await store.get(key), patch);
          return saved;
        } catch (error) {
          failed = true;
          if (waited >= budgetMs) {
            // Left pending and locked: a later claim takes it over only as a takeover, which never re-runs blindly.
            stop();
            throw error;
          }
          options.onRetry?.(error);
          const ms = Math.min(delay, budgetMs - waited);
          await pause(ms);
          waited += ms;
          delay = Math.min(delay * 2, Math.max(FIRST_BACKOFF_MS, leaseMs / 3));
        }
      }
    },
    release() {
      stop();
      // Step "release": delete(key, {token, pending}).
      return store.delete(key, expect);
    },
    stop,
  };
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
