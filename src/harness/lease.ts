import { holdClaim } from "../claim/hold.js";
import type { ClaimSpec, Hold } from "../claim/types.js";
import type { Call } from "./call.js";

export type Lease = Hold;

/** The claim layer's hold on a ledger record, with the harness's timers (so that a test's fake time drives them). */
export function holdLease<A, R>(call: Call<A, R>, token: string): Lease {
  return holdClaim(claimSpec(call), token);
}

/** How the harness claims `call`'s key through the claim layer (parked for approval, or pending with `data`). */
export function claimSpec<A, R>(call: Call<A, R>, park = false, data: string | null = null): ClaimSpec {
  const { core } = call;
  return {
    store: core.store,
    key: call.sk,
    fingerprint: call.key,
    leaseMs: core.leaseMs,
    ttlMs: core.retentionMs,
    state: park ? "awaiting_approval" : "pending",
    data,
    schedule: core.schedule,
    pause: core.sleep,
  };
}
