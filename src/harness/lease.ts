import type { Call } from "./call.js";

export type Lease = { stop(): void };

/** Renews the claim's lease every third of `leaseMs` until stopped, or until the claim is gone. */
export function holdLease<A, R>(call: Call<A, R>, token: string): Lease {
  const { store, leaseMs, schedule } = call.core;
  let stopped = false;
  const renew = async () => {
    if (stopped) return;
    try {
      // Expecting `pending` keeps a late renewal from touching a completed or released record.
      if (!(await store.update(call.sk, { token, state: "pending" }, { leaseMs }))) return;
    } catch {
      // A store hiccup: the next renewal may still come before the lease runs out.
    }
    if (!stopped) cancel = schedule(leaseMs / 3, renew);
  };
  let cancel = schedule(leaseMs / 3, renew);
  return {
    stop: () => {
      stopped = true;
      cancel();
    },
  };
}
