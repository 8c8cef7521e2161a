import { claimInput, toClaim } from "../claim/claim.js";
import type { Claim } from "../claim/types.js";
import { ApprovalDeniedError } from "../errors/approval-denied-error.js";
import { CanonicalizationError } from "../errors/canonicalization-error.js";
import { OutcomeUnknownError, OutcomeUnknownReason } from "../errors/outcome-unknown-error.js";
import { WaitTimeoutError } from "../errors/wait-timeout-error.js";
import type { StoreRecord } from "../store/types.js";
import { type Call, emit } from "./call.js";
import { ClaimLost, type Held, hold, parseResult, type Unknown } from "./hold.js";
import { claimSpec } from "./lease.js";
import { addEvent, decodeData, encodeData, lastEvent } from "./ledger.js";
import type { LedgerCall } from "./record/types.js";
import { Effect } from "./types.js";

/**
 * Takes one ledger-backed call to its outcome: claims the key and runs, replays a completed record, waits for the
 * same call running elsewhere or for an approval, takes over a claim whose process stopped, or throws what the
 * record says (denied, outcome unknown).
 */
export async function settle<A, R>(call: Call<A, R>): Promise<R> {
  const { core, tool } = call;
  const waiting: Waiting = { on: undefined, since: 0, pauseMs: core.waitMinDelayMs, seenAt: 0 };
  for (;;) {
    call.signal?.throwIfAborted();
    waiting.seenAt = core.clock();
    const token = crypto.randomUUID();
    const park = tool.requiresApproval;
    const data = park ? addEvent(call.data, { type: "approval_requested", at: core.clock() }) : call.data;
    // Step "claim" (docs/claim-protocol.md): one atomic store.claim, as the claim layer's claimKey makes it.
    const sent = encodeData(data, core.ledgerVersion);
    const spec = claimSpec(call, park, sent);
    const claimed: Claim = toClaim(spec, token, await core.store.claim(call.sk, claimInput(spec, token)));
    try {
      if (claimed.status === "held" && claimed.previous !== undefined) {
        return await takeOver(call, claimed.record, claimed.previous, claimed.hold);
      }
      if (claimed.status === "held" && !park) {
        return await hold(call, {
          token,
          data,
          args: call.args,
          argsDiffer: false,
          attempt: 1,
          releaseTo: "absent",
          lease: claimed.hold,
        });
      }
      if (claimed.status === "held") emit(call, { type: "approval_requested", attempt: 0 });

      let record: StoreRecord | undefined = claimed.record;
      // A record the claim just reported was not taken over by it; if it looks expired all the same (this clock runs
      // ahead of the store's), pause before claiming again rather than spin.
      let fresh = true;
      while (record !== undefined) {
        const state = record.state;
        if (state === "pending" || state === "awaiting_approval") {
          const lapsed =
            state === "pending" && record.leaseUntil !== null && record.leaseUntil <= core.clock();
          if (lapsed && !fresh) break;
          await pause(call, waiting, state);
          record = await look(call, waiting);
          fresh = false;
          continue;
        }
        endWait(call, waiting, record.attempts);
        if (state === "completed") return replay(call, record, sent);
        if (state === "denied") {
          const denial = lastEvent(decodeData(record), "denied");
          throw new ApprovalDeniedError(call.key, denial?.reason ?? "no reason given", denial?.by);
        }
        if (state === "approved") {
          const started = await startFrom(call, record, undefined);
          if (started) return started.value;
        } else if (state === "outcome_unknown") {
          if (tool.reconcile === undefined || tool.effect !== Effect.unguarded) throw unknown(call, record);
          const started = await startFrom(call, record, {
            ...heldBecause(record),
            why: "its outcome was unknown",
          });
          if (started) return started.value;
        }
        // Someone else moved the record first: look again.
        record = await look(call, waiting);
        fresh = false;
      }
      if (record === undefined && core.clock() - waiting.seenAt > core.retentionMs) {
        throw new OutcomeUnknownError({
          by: "expired",
          key: call.key,
          tool: tool.name,
          retentionMs: core.retentionMs,
        });
      }
      // The record is gone (released after a final failure) or its lease lapsed: the next claim takes the key.
      endWait(call, waiting, record?.attempts ?? 0);
    } catch (error) {
      // The claim was taken over while this call paused between attempts: look at the ledger anew.
      if (!(error instanceof ClaimLost)) throw error;
    }
  }
}

/**
 * A wait in progress. `seenAt`: when the last look that found a record was asked for (this clock, before the store
 * answered). A record the store no longer returns, looked for within `retentionMs` of then, was deleted (released
 * after a final failure): one that finished after that look cannot have expired yet. Later than that, it may have
 * finished, its effect done, and expired meanwhile: the caller is told the outcome is unknown instead of running it.
 */
type Waiting = {
  on: "pending" | "awaiting_approval" | undefined;
  since: number;
  pauseMs: number;
  seenAt: number;
};

/** The call's record, now; `seenAt` moves when there is one. */
async function look<A, R>(call: Call<A, R>, waiting: Waiting): Promise<StoreRecord | undefined> {
  const asked = call.core.clock();
  const record = await call.core.store.get(call.sk);
  if (record !== undefined) waiting.seenAt = asked;
  return record;
}

function endWait<A, R>(call: Call<A, R>, waiting: Waiting, attempt: number): void {
  if (waiting.on === undefined) return;
  emit(call, { type: "waited", attempt, on: waiting.on });
  waiting.on = undefined;
}

/** Pauses before the next look at a record that is pending elsewhere or awaiting approval; bounded by a timeout. */
async function pause<A, R>(
  call: Call<A, R>,
  waiting: Waiting,
  state: "pending" | "awaiting_approval",
): Promise<void> {
  const { core } = call;
  const now = core.clock();
  if (waiting.on !== state) {
    waiting.on = state;
    waiting.since = now;
  }
  const limit = state === "pending" ? core.waitTimeoutMs : core.approvalTimeoutMs;
  const waited = now - waiting.since;
  if (waited >= limit) throw new WaitTimeoutError(call.key, state, waited);
  // Jittered, so that several waiters do not poll the store in step.
  const ms = Math.min(waiting.pauseMs * (0.5 + Math.random() / 2), limit - waited);
  waiting.pauseMs = Math.min(waiting.pauseMs * 2, core.waitMaxDelayMs);
  await core.sleep(ms, call.signal);
}

/** `sent` is the data this call's claim carried. */
function replay<A, R>(call: Call<A, R>, record: StoreRecord, sent: string): R {
  if (record.result === null) {
    // Completed without a result: the tool ran, but what it returned was not JSON (see hold.ts `complete`).
    throw new CanonicalizationError(
      "$.result",
      `the tool "${call.tool.name}" already ran for this key, but its result was not a JSON value, so the ledger ` +
        "could not record it and cannot replay it; the tool will not run again for this key",
    );
  }
  // A record holding the very data this call's claim carried (a replay of the same call, the common case) reads
  // back as this call, with this call's args hash: decoding it again, only to compare that hash, was a tenth of a
  // memory replay. Any other data is decoded, which also refuses a record this idemkey cannot read, as before.
  const argsDiffer = record.data === sent ? false : decodeData(record).argsHash !== call.argsHash;
  call.replayed = true;
  if (call.core.onEvent !== undefined) {
    emit(call, { type: "replayed", attempt: record.attempts, argsDiffer });
  }
  return parseResult(record.result) as R;
}

function unknown<A, R>(call: Call<A, R>, record: StoreRecord): OutcomeUnknownError {
  const { why, reason, answer } = heldBecause(record);
  return new OutcomeUnknownError({
    key: call.key,
    tool: call.tool.name,
    why,
    reason,
    ...(answer === undefined ? {} : { answer }),
  });
}

/** Why a record is `outcome_unknown`, as its last `outcome_unknown` event says (without one: interrupted). */
function heldBecause(record: StoreRecord): Unknown {
  const event = lastEvent(decodeData(record), "outcome_unknown");
  return {
    why: event?.error ?? "an earlier attempt may or may not have taken effect",
    reason: event?.reason ?? OutcomeUnknownReason.interrupted,
    ...(event?.answer === undefined ? {} : { answer: event.answer }),
  };
}

/** The arguments to run under a record: this call's own, or the recorded call's when only the identity matched. */
function heldFor<A>(call: Call<A, unknown>, data: LedgerCall): Pick<Held<A>, "args" | "argsDiffer"> {
  if (data.argsHash === call.argsHash) return { args: call.args, argsDiffer: false };
  return { args: data.args.value() as A, argsDiffer: true };
}

/** A claim whose process stopped: keyed and idempotent calls run again with the same key; unguarded ones may not. */
function takeOver<A, R>(
  call: Call<A, R>,
  record: StoreRecord,
  previous: StoreRecord,
  lease: Held<A>["lease"],
): Promise<R> {
  // Kept in the audit trail (written with the record's next change) so that an inspector sees crashes taken over.
  const data = addEvent(decodeData(record), {
    type: "taken_over",
    at: call.core.clock(),
    previousAttempts: previous.attempts,
  });
  // Unguarded attempts are counted as they start; others as they end, so that 0 may hide a first attempt.
  const unguarded = call.tool.effect === Effect.unguarded;
  const attempt = unguarded ? previous.attempts + 1 : Math.max(previous.attempts, 1) + 1;
  emit(call, { type: "taken_over", attempt, previousAttempts: previous.attempts });
  const held: Held<A> = {
    token: record.token!,
    data,
    dataChanged: true,
    ...heldFor(call, data),
    attempt,
    releaseTo: call.tool.requiresApproval ? "approved" : "absent",
    lease,
  };
  if (unguarded && previous.attempts > 0) {
    held.unknownBecause = {
      why: `the process running attempt ${previous.attempts} stopped while it was pending`,
      reason: OutcomeUnknownReason.interrupted,
    };
  }
  return hold(call, held);
}

/**
 * Claims an approved record (or an unknown one, to reconcile it) with a compare-and-set on its state, so that
 * exactly one of the callers runs it. `undefined` when another caller moved it first.
 */
async function startFrom<A, R>(
  call: Call<A, R>,
  record: StoreRecord,
  unknownBecause: Unknown | undefined,
): Promise<{ value: R } | undefined> {
  const { core } = call;
  const token = crypto.randomUUID();
  const started = await core.store.update(
    call.sk,
    { state: record.state },
    { state: "pending", token, leaseMs: core.leaseMs },
  );
  if (!started) return undefined;
  const data = decodeData(started);
  const held: Held<A> = {
    token,
    data,
    ...heldFor(call, data),
    attempt: started.attempts + 1,
    releaseTo: unknownBecause === undefined ? "approved" : "absent",
  };
  if (unknownBecause !== undefined) held.unknownBecause = unknownBecause;
  return { value: await hold(call, held) };
}
