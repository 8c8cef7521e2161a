import { holdClaim } from "../claim/hold.js";
import type { Hold } from "../claim/types.js";
import type { Call } from "./call.js";

export type Lease = Hold;

/** The claim layer's hold on a ledger record, with the harness's timers (so that a test's fake time drives them). */
export function holdLease<A, R>(call: Call<A, R>, token: string): Lease {
  return holdClaim(claimSpec(call), token);
}

/** How the harness claims `call`'s key through the claim layer. */
export function claimSpec<A, R>(call: Call<A, R>) {
  const { store, leaseMs, ttlMs, schedule, sleep } = call.core;
  return {
    store,
    key: call.sk,
    fingerprint: call.key,
    leaseMs,
    ttlMs,
    schedule,
    pause: (ms: number) => sleep(ms),
  };
}
