import type { Hold } from "../claim/types.js";
import { type OwnerResponse, type Problem, ProblemType } from "./problem.js";

/**
 * Step "mark unknown" (docs/claim-protocol.md): the key is recorded `outcome_unknown`, so that every later request
 * with it is answered `outcomeUnknown` and nothing runs twice, and renewal stops. A store error is thrown: the key
 * is then left pending, lapses with its lease, and the retry that takes it over gets the same answer.
 */
export async function markUnknown(hold: Hold, retentionMs: number): Promise<void> {
  try {
    await hold.write({ state: "outcome_unknown", token: null, leaseMs: null, ttlMs: retentionMs });
  } finally {
    hold.stop();
  }
}

/** The answer to a key recorded `outcome_unknown`: a takeover after a lapsed lease, or a handler that threw. */
export function outcomeUnknown(problem: Problem): OwnerResponse {
  return problem(
    ProblemType.outcomeUnknown,
    "An earlier request with this Idempotency-Key failed or was interrupted while it was being processed, and it " +
      "may or may not have taken effect, so it will not be processed again. Check whether it took effect before " +
      "sending it with a new key.",
  );
}
