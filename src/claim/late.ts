import type { RecordPatch, StoreRecord } from "../store/types.js";

/**
 * Step "mark unknown" by a taker that does not run the work again (the middleware, MCP and A2A by default): the
 * patch that records the key `outcome_unknown` keeping the token of the claim it took over, whose attempt is the one
 * that may have run. That token is what the attempt's late save is fenced on (`Hold.save`'s `late` option): if the
 * attempt finishes after all, its save settles the unknown, and no other attempt's save can. A chain of takers (one
 * whose own mark failed, taken over in turn) keeps the token of the last, which ran nothing; so does a takeover
 * whose claim was resent (its `previous` is the record as it stands, under the taker's own token). The key then
 * stays unknown, as it was before late saves: never settled by the wrong attempt.
 */
export function unknownAfterTakeover(previous: StoreRecord, patch: RecordPatch): RecordPatch {
  return { ...patch, state: "outcome_unknown", token: previous.token, leaseMs: null };
}
