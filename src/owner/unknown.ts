import { unknownAfterTakeover } from "../claim/late.js";
import type { Hold } from "../claim/types.js";
import type { StoreRecord } from "../store/types.js";
import { withOwnerEvent } from "./audit.js";
import { type OwnerResponse, type Problem, ProblemType } from "./problem.js";

/**
 * Step "mark unknown" (docs/claim-protocol.md): the key is recorded `outcome_unknown`, so that every later request
 * with it is answered `outcomeUnknown` and nothing runs twice, and renewal stops. A store error is thrown: the key
 * is then left pending, lapses with its lease, and the retry that takes it over gets the same answer. After a
 * takeover (`takenFrom`, the record as it was), the request taken over may still finish: its save then lands late.
 */
export async function markUnknown(hold: Hold, retentionMs: number, takenFrom?: StoreRecord): Promise<void> {
  try {
    await hold.write(
      takenFrom === undefined
        ? // A handler that threw: its own holder says so, and nothing may settle the outcome but a person.
          { state: "outcome_unknown", token: null, leaseMs: null, ttlMs: retentionMs }
        : // A takeover: the token of the request taken over is kept, so that its late save may settle the outcome.
          unknownAfterTakeover(takenFrom, {
            ttlMs: retentionMs,
            data: withOwnerEvent(takenFrom.data, { type: "taken_over", at: Date.now() }),
          }),
    );
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
