import { CanonicalizationError } from "../errors/canonicalization-error.js";
import { isErrorAnswer } from "../errors/guards.js";
import { IdemkeyError } from "../errors/idemkey-error.js";
import { OutcomeUnknownError, OutcomeUnknownReason } from "../errors/outcome-unknown-error.js";
import { StoreError } from "../errors/store-error.js";
import { canonicalizeAt, DEFAULT_MAX_DEPTH } from "../key/canonicalize.js";
import type { RecordPatch } from "../store/types.js";
import { nextTurn } from "../store/yield.js";
import { type Call, describeError, emit, planRetry, toolContext, untilAborted } from "./call.js";
import { holdLease, type Lease } from "./lease.js";
import { decodeData, encodeData, withEvent } from "./ledger.js";
import type { LedgerCall } from "./record/types.js";
import { hadNoEffect } from "./retry.js";
import { Effect, type LedgerEvent } from "./types.js";

/** A pending claim this call holds, and what it runs under it. */
export interface Held<A> {
  token: string;
  /** The record's data as claimed: the call it stands for. */
  data: LedgerCall;
  /** `data` gained events in memory (a takeover) that the next write of the record must carry. */
  dataChanged?: boolean;
  /** The arguments to run: this call's own, or the recorded ones when the identity matched other arguments. */
  args: A;
  argsDiffer: boolean;
  /** The first attempt's number. */
  attempt: number;
  /** What a final failure leaves: no record (a later call may try again), or an approved one (its approval stands). */
  releaseTo: "absent" | "approved";
  /**
   * Set when the outcome of an earlier attempt of an unguarded call is not known (a takeover, or a record whose
   * outcome was unknown): the tool's reconcile decides before anything runs, and without one the outcome stays
   * unknown, for the reason given.
   */
  unknownBecause?: Unknown;
  /** The claim layer's hold when the claim made one already (a claim or takeover); else `hold` starts one. */
  lease?: Lease;
}

/**
 * Why an outcome is unknown: `why` for a person (the error's message, the ledger's audit trail), `reason` and the
 * tool's own `answer` for the model (see `OutcomeUnknownError`).
 */
export interface Unknown {
  why: string;
  reason: OutcomeUnknownReason;
  answer?: string | undefined;
}

/** The longest answer the ledger keeps for the model to read on a later call. */
const MAX_ANSWER = 2000;

/** The tool's own words in an error it answered or threw: what the model reads when the error puts a call on hold. */
export function answerOf(error: unknown): string | undefined {
  const text = isErrorAnswer(error)
    ? error.text
    : error instanceof Error
      ? error.message
      : typeof error === "string"
        ? error
        : undefined;
  if (text === undefined || text === "") return undefined;
  return text.length > MAX_ANSWER ? `${text.slice(0, MAX_ANSWER - 3)}...` : text;
}

/** Thrown when the claim was lost (taken over after a stall) between attempts: the caller looks at the ledger anew. */
export class ClaimLost extends IdemkeyError {
  override name = "ClaimLost" as const;
  constructor() {
    super("The claim on this key was taken over between attempts; the call reads the ledger anew");
  }
}

/** Runs the call under a claim this call holds, renewing the lease until the outcome is written. */
export function hold<A, R>(call: Call<A, R>, held: Held<A>): Promise<R> {
  const lease = held.lease ?? holdLease(call, held.token);
  const run = attempts(call, held, lease);
  if (call.signal === undefined) return run;
  // The caller stops waiting when its signal aborts, even if the tool ignores it; the run goes on under its lease,
  // so that the tool's outcome is still recorded (or released) when it ends.
  run.catch(() => {});
  return untilAborted(run, call.signal).catch(async (reason: unknown) => {
    // A tool that honours the signal settles within a turn or two of the event loop: give it that, so that its
    // caller gets the recorded outcome (an unknown one, say) rather than the bare abort reason. No longer.
    const late = await Promise.race([
      run.then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
      turns(3),
    ]);
    if (late === undefined) throw reason;
    if (late.ok) return late.value;
    throw late.error;
  });
}

async function turns(n: number): Promise<undefined> {
  for (let i = 0; i < n; i++) await nextTurn();
  return undefined;
}

async function attempts<A, R>(call: Call<A, R>, held: Held<A>, lease: Lease): Promise<R> {
  // One async frame for the reconcile, the loop and the renewal's end: each layer cost a promise and microtask hops
  // per call (and `return await`, unlike returning the promise, does not adopt it through two more).
  const { core, tool } = call;
  let failures = 0;
  try {
    if (held.unknownBecause !== undefined) {
      const found = await reconcile(call, held, lease, held.attempt, held.unknownBecause, undefined);
      if (found.done) return found.value;
    }
    for (let attempt = held.attempt; ; attempt++) {
      if (call.signal?.aborted) {
        await release(call, held, attempt - 1);
        throw call.signal.reason;
      }
      // An unguarded attempt is marked started before it runs, so that a takeover can tell a claim whose process
      // died before sending anything (safe to run) from one that may have reached the owner.
      if (tool.effect === Effect.unguarded) await mark(call, held, attempt);
      let value: R;
      try {
        value = await tool.run(held.args, toolContext(call, attempt));
      } catch (error) {
        failures++;
        if (tool.effect === Effect.unguarded && !hadNoEffect(error, tool.noEffect)) {
          // The request may have reached the owner: only the world can tell whether it took effect.
          const because: Unknown = {
            why: `attempt ${attempt} failed`,
            reason: OutcomeUnknownReason.unclassifiedError,
            answer: answerOf(error),
          };
          const found = await reconcile(call, held, lease, attempt, because, error);
          if (found.done) return found.value;
        }
        const delayMs = await planRetry(call, attempt, failures, error).catch(async (planError: unknown) => {
          await release(call, held, attempt);
          throw planError;
        });
        if (delayMs === undefined) {
          await release(call, held, attempt);
          emit(call, { type: "failed", attempt, error });
          throw error;
        }
        emit(call, { type: "retried", attempt, delayMs, error });
        try {
          await core.sleep(delayMs, call.signal);
        } catch (reason) {
          await release(call, held, attempt);
          throw reason;
        }
        if (tool.effect !== Effect.unguarded) await mark(call, held, attempt);
        continue;
      }
      return await complete(call, held, lease, value, attempt, undefined);
    }
  } finally {
    lease.stop();
  }
}

/** Writes the attempt count (renewing the lease); a claim lost meanwhile stops this holder. */
async function mark<A, R>(call: Call<A, R>, held: Held<A>, attempts: number): Promise<void> {
  const { core } = call;
  const marked = await core.store.update(
    call.sk,
    { token: held.token, state: "pending" },
    // Expiry moves with the lease, as a renewal moves it: a pending record never expires under its lease.
    { attempts, leaseMs: core.leaseMs, ttlMs: core.leaseMs + core.retentionMs },
  );
  if (!marked) throw new ClaimLost();
}

/**
 * Asks the tool's reconcile what became of an unguarded call; `done: false` means it did not take effect and may
 * run. Without a reconcile, or when it cannot tell, the record goes to `outcome_unknown` and this throws.
 */
async function reconcile<A, R>(
  call: Call<A, R>,
  held: Held<A>,
  lease: Lease,
  attempt: number,
  because: Unknown,
  cause: unknown,
): Promise<{ done: true; value: R } | { done: false }> {
  const check = call.tool.reconcile;
  if (check === undefined) throw await markUnknown(call, held, attempt, because, cause);
  const { why } = because;
  let found: Awaited<ReturnType<typeof check>>;
  try {
    found = await check(held.args, toolContext(call, attempt));
  } catch (error) {
    throw await markUnknown(call, held, attempt, { ...because, why: `${why}, and reconcile threw` }, error);
  }
  if (found === undefined) {
    const undecided = { ...because, why: `${why}, and reconcile could not tell` };
    throw await markUnknown(call, held, attempt, undecided, cause);
  }
  if (found?.status === "done") {
    return { done: true, value: await complete(call, held, lease, found.result, attempt, "reconcile") };
  }
  if (found?.status === "not_done") return { done: false };
  const bad = new TypeError(
    `tool.reconcile of "${call.tool.name}" must return { status: "done", result }, { status: "not_done" } or undefined`,
  );
  throw await markUnknown(
    call,
    held,
    attempt,
    { ...because, why: `${why}, and reconcile answered nonsense` },
    bad,
  );
}

/**
 * Records the result and returns its JSON form. A result that is not JSON is never recorded as completed: the claim
 * is released, except for an unguarded call, which did take effect and so must not run again: its outcome is
 * recorded as unknown.
 */
async function complete<A, R>(
  call: Call<A, R>,
  held: Held<A>,
  lease: Lease,
  value: unknown,
  attempt: number,
  resolvedBy: "reconcile" | undefined,
): Promise<R> {
  const { core, tool } = call;
  let text: string;
  try {
    // `undefined` is a valid "no result" (a void tool): recorded as the empty text, which no JSON value is.
    text = value === undefined ? NO_RESULT : canonicalizeAt(value, "$.result", DEFAULT_MAX_DEPTH);
  } catch (error) {
    const reason =
      error instanceof CanonicalizationError ? `${error.reason} at ${error.path}` : describeError(error);
    const bad = new CanonicalizationError(
      error instanceof CanonicalizationError ? error.path : "$.result",
      `the result of tool "${tool.name}" is not a JSON value, so the ledger cannot record it: ${reason}; return plain data`,
      { cause: error },
    );
    if (tool.effect === Effect.unguarded) {
      const because: Unknown = {
        why: `it ran but returned a result that is not JSON (${reason})`,
        reason: OutcomeUnknownReason.unrecordableResult,
      };
      throw await markUnknown(call, held, attempt, because, bad);
    }
    // The effect happened: the key is closed as completed without a result, so that no later call runs it again
    // (a replay throws the same CanonicalizationError).
    const written = await writeCompletion(call, lease, {
      state: "completed",
      result: null,
      token: null,
      leaseMs: null,
      attempts: attempt,
      ttlMs: core.retentionMs,
    }).catch(() => undefined);
    emit(call, { type: "failed", attempt, error: bad });
    // As for a JSON result: the outcome a taker marked unknown is now known, and whoever counts resolutions hears it.
    if (written === "late") emit(call, { type: "resolved", attempt, by: undefined, how: "late_completion" });
    throw bad;
  }
  const patch: RecordPatch = {
    state: "completed",
    result: text,
    token: null,
    leaseMs: null,
    attempts: attempt,
    ttlMs: core.retentionMs,
  };
  if (resolvedBy) {
    patch.data = withEvent(
      held.data,
      { type: "resolved", at: core.clock(), how: resolvedBy },
      core.ledgerVersion,
    );
  } else if (held.dataChanged) patch.data = encodeData(held.data, core.ledgerVersion);
  let recorded: boolean;
  let late = false;
  try {
    // The store's write awaited here rather than through writeCompletion: one async layer fewer per call.
    recorded = (await lease.save(patch)) !== undefined;
    if (!recorded) recorded = late = await lateCompletion(call, patch);
  } catch (error) {
    // The store stayed down past the save budget: the record is left pending (locked), never released, so a later
    // call takes it over and an unguarded tool's started mark makes its outcome unknown rather than run it again.
    const failure = new StoreError({
      store: error instanceof StoreError ? error.store : "store",
      operation: "complete",
      key: call.key,
      reason: "outcome-unsaved",
      tool: tool.name,
      attempt,
      detail: describeError(error),
      cause: error,
    });
    emit(call, { type: "failed", attempt, error: failure });
    throw failure;
  }
  // Checked here, so that no event object is built per call when nobody listens.
  if (call.core.onEvent !== undefined) {
    if (resolvedBy) emit(call, { type: "resolved", attempt, by: undefined, how: resolvedBy });
    else emit(call, { type: "executed", attempt, recorded, argsDiffer: held.argsDiffer });
    // The outcome a taker marked unknown is now known: said as the ledger's audit trail says it, so that whoever
    // counts resolutions (tracedHarness's counter) counts this one too.
    if (late) emit(call, { type: "resolved", attempt, by: undefined, how: "late_completion" });
  }
  return parseResult(text) as R;
}

/** The recorded text of a tool that returned `undefined`. */
export const NO_RESULT = "";

/** A recorded result back as a value: the empty text is `undefined`. */
export function parseResult(text: string): unknown {
  return text === NO_RESULT ? undefined : JSON.parse(text);
}

/**
 * The one write that closes the window between the effect and the ledger: the claim layer's must-happen write,
 * retried with backoff under a renewed lease (it throws once its budget is spent). When the claim was lost meanwhile
 * (a takeover after a stall) and the taker found the outcome unknown, the result now known is recorded after all
 * (`"late"`: the caller says so as a `resolved` event).
 */
async function writeCompletion<A, R>(
  call: Call<A, R>,
  lease: Lease,
  patch: RecordPatch,
): Promise<"saved" | "late" | undefined> {
  if ((await lease.save(patch)) !== undefined) return "saved";
  return (await lateCompletion(call, patch)) ? "late" : undefined;
}

/** After the claim was lost: the completion over an `outcome_unknown` record, if that is what the taker left. */
async function lateCompletion<A, R>(call: Call<A, R>, patch: RecordPatch): Promise<boolean> {
  const { core } = call;
  try {
    const now = await core.store.get(call.sk);
    if (now?.state !== "outcome_unknown") return false;
    const event: LedgerEvent = { type: "resolved", at: core.clock(), how: "late_completion" };
    const late = await core.store.update(
      call.sk,
      { state: "outcome_unknown" },
      { ...patch, data: withEvent(decodeData(now), event, core.ledgerVersion) },
    );
    return late !== undefined;
  } catch {
    return false;
  }
}

/** Gives the claim up after a final failure, so that a later call with the same key may try again. */
async function release<A, R>(call: Call<A, R>, held: Held<A>, attempt: number): Promise<void> {
  const expect = { token: held.token, state: "pending" } as const;
  try {
    if (held.releaseTo === "approved") {
      await call.core.store.update(call.sk, expect, {
        state: "approved",
        token: null,
        leaseMs: null,
        attempts: attempt,
      });
    } else {
      await call.core.store.delete(call.sk, expect);
    }
  } catch {
    // Unreleased, the claim lapses when its lease runs out, and the next call takes it over.
  }
}

/** Records that the outcome is unknown and returns the error to throw. */
async function markUnknown<A, R>(
  call: Call<A, R>,
  held: Held<A>,
  attempt: number,
  because: Unknown,
  cause: unknown,
): Promise<OutcomeUnknownError> {
  const { core, key, tool } = call;
  const { why, reason, answer } = because;
  const error = new OutcomeUnknownError({
    key,
    tool: tool.name,
    why,
    reason,
    ...(answer === undefined ? {} : { answer }),
    ...(cause === undefined ? {} : { cause }),
  });
  // The reason and the tool's words are kept, so that a later call finding the key on hold tells the model the same.
  const event: LedgerEvent = {
    type: "outcome_unknown",
    at: core.clock(),
    error: cause === undefined ? why : `${why}: ${describeError(cause)}`,
    reason,
    ...(answer === undefined ? {} : { answer }),
  };
  try {
    await core.store.update(
      call.sk,
      { token: held.token, state: "pending" },
      {
        state: "outcome_unknown",
        token: null,
        leaseMs: null,
        attempts: attempt,
        data: withEvent(held.data, event, core.ledgerVersion),
      },
    );
  } catch {
    // Left pending, the claim lapses and the next call's takeover finds the outcome unknown all the same.
  }
  emit(call, { type: "outcome_unknown", attempt, error });
  return error;
}
