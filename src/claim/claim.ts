import type { ClaimInput, ClaimResult } from "../store/types.js";
import { holdClaim } from "./hold.js";
import type { Claim, ClaimSpec, Hold } from "./types.js";

/**
 * Step "claim": one atomic `store.claim`. `claimed` and `taken_over` give this caller the key (renewal starts at
 * once); `exists` is the record someone else holds or completed. A resent claim (same token) is answered by the
 * store as the first one was decided (see docs/claim-protocol.md, "the resend rule").
 */
export async function claimKey(spec: ClaimSpec, token: string = crypto.randomUUID()): Promise<Claim> {
  return toClaim(spec, token, await spec.store.claim(spec.key, claimInput(spec, token)));
}

/** What `claimKey` sends the store: retention counted past the lease (see `holdClaim`). */
export function claimInput(spec: ClaimSpec, token: string): ClaimInput {
  return {
    fingerprint: spec.fingerprint,
    token,
    leaseMs: spec.leaseMs,
    ttlMs: spec.leaseMs + spec.ttlMs,
    state: spec.state ?? "pending",
    data: spec.data ?? null,
  };
}

/**
 * The store's answer as the claim layer's: a hold (renewing) for a claim or takeover. Split from `claimKey` so that
 * the harness's hot path awaits the store directly (one promise fewer per call, measurable on the memory store).
 */
export function toClaim(spec: ClaimSpec, token: string, claimed: ClaimResult): Claim {
  if (claimed.status === "exists") return claimed;
  const pending = claimed.record.state === "pending";
  return {
    status: "held",
    // A parked record (awaiting approval) has no lease to renew.
    hold: pending ? holdClaim(spec, token) : inert(token),
    record: claimed.record,
    previous: claimed.status === "taken_over" ? claimed.previous : undefined,
  };
}

function inert(token: string): Hold {
  return {
    token,
    lost: new AbortController().signal,
    write: async () => undefined,
    save: async () => undefined,
    release: async () => false,
    stop: () => {},
  };
}
