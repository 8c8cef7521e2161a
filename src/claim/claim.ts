import { randomUUID } from "node:crypto";
import { holdClaim } from "./hold.js";
import type { Claim, ClaimSpec } from "./types.js";

/**
 * Step "claim": one atomic `store.claim`. `claimed` and `taken_over` give this caller the key (renewal starts at
 * once); `exists` is the record someone else holds or completed. A resent claim (same token) is answered by the
 * store as the first one was decided (see docs/claim-protocol.md, "the resend rule").
 */
export async function claimKey(spec: ClaimSpec, token: string = randomUUID()): Promise<Claim> {
  const claimed = await spec.store.claim(spec.key, {
    fingerprint: spec.fingerprint,
    token,
    leaseMs: spec.leaseMs,
    ttlMs: Math.max(spec.ttlMs, spec.leaseMs),
    state: spec.state ?? "pending",
    data: spec.data ?? null,
  });
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

function inert(token: string) {
  return {
    token,
    lost: new AbortController().signal,
    write: async () => undefined,
    save: async () => undefined,
    release: async () => false,
    stop: () => {},
  };
}
