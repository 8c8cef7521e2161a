import { claimKey } from "../../claim/claim.js";
import { unknownAfterTakeover } from "../../claim/late.js";
import type { Claim, Hold } from "../../claim/types.js";
import { LeaseLostError } from "../../errors/lease-lost-error.js";
import { hadNoEffect } from "../../harness/retry.js";
import { canonicalize } from "../../key/canonicalize.js";
import { sha256Hex } from "../../key/idempotency-key.js";
import { describeThrown } from "../../options/describe.js";
import { lateCompletion, withOwnerEvent } from "../../owner/audit.js";
import { StorePrefix, scopedKey } from "../../store/scoped-key.js";
import type { Store } from "../../store/types.js";
import { Refusal } from "../meta.js";
import type { McpErrorEvent } from "./dedupe-options.js";
import { type LookupFound, lookupFound } from "./lookup-call.js";

/** One keyed tool call, as `mcpDedupe` and the MCP gateway both describe it. */
export interface KeyedCall<R> {
  store: Store;
  leaseMs: number;
  retentionMs: number;
  rerunAfterTakeover: boolean;
  scope: string;
  key: string;
  /**
   * Where the record lives in the store. @default `mcpRecordKey(scope, key)`; the A2A executor passes its own, under
   * `a2a:`, so that its records and MCP's never meet.
   */
  recordKey?: string;
  tool: string;
  args: unknown;
  /** Runs the tool. A throw means the outcome is unknown unless the error says `noEffect: true`. */
  run: () => Promise<R>;
  /** The text saved for a result, or `undefined` to release the key instead (the result had no effect). */
  serialize: (result: R) => string | undefined;
  /**
   * How long a call that finds the key still running waits for that call's answer, in milliseconds, polling the
   * store; past it the call is refused as in flight. 0 refuses at once.
   */
  waitMs: number;
  /** The wait between two polls while waiting. */
  pollMs: number;
  onError: (event: McpErrorEvent) => void;
  /**
   * Asks instead of runs (`"dev.idemkey/lookup": true`): the answer is what the record of the key says, and `run`
   * is never called. @default false
   */
  lookup?: boolean;
}

/** What became of a keyed call: the tool ran, or it did not and this is why. */
export type CallOutcome<R> =
  /** The tool ran and this is what it answered (saved, unless `serialize` said no). */
  | { readonly kind: "ran"; readonly result: R }
  /** The tool did not run: an earlier call with the key answered this, as saved. */
  | { readonly kind: "replayed"; readonly saved: string }
  /** The tool ran and threw an error that says it had no effect: the key was released. */
  | { readonly kind: "no_effect"; readonly error: unknown }
  /** The tool did not run (or, for `outcome_unknown` after a throw, ran once and will not again). */
  | { readonly kind: "refused"; readonly refusal: Refusal; readonly text: string }
  /** A lookup: the tool did not run, and this is what the record of the key in the caller's scope says. */
  | { readonly kind: "looked_up"; readonly found: LookupFound };

/** The record key of a keyed MCP call: under `mcp:`, by scope and key, wherever the call was deduped. */
export const mcpRecordKey = (scope: string, key: string) => scopedKey(StorePrefix.mcp, scope, key);

/** What a key is bound to: the tool and its arguments, so that a key reused for another call is refused. */
export const mcpFingerprint = (tool: string, args: unknown) => sha256Hex(canonicalize([tool, args ?? null]));

/**
 * The one decision of a keyed MCP tool call, step by step as docs/claim-protocol.md names them: claim the key; a
 * record that exists is replayed, refused as reused, refused as unknown, or (in flight) waited for up to `waitMs`;
 * a held key runs the tool and saves what it answered, releases the key for an answer or error that says it had
 * no effect, and records `outcome_unknown` for a throw nobody vouches for. `mcpDedupe` and the MCP gateway each
 * translate the outcome into their own shapes.
 */
export async function dedupeCall<R>(call: KeyedCall<R>): Promise<CallOutcome<R>> {
  const { store, leaseMs, retentionMs, scope, key, tool } = call;
  const fingerprint = mcpFingerprint(tool, call.args);
  const recordKey = call.recordKey ?? mcpRecordKey(scope, key);
  const report = (phase: McpErrorEvent["phase"], error: unknown) =>
    call.onError({ error, phase, tool, scope, key });
  if (call.lookup === true) {
    // The same rule as a call's, read without claiming: a lookup never takes, waits for or changes a key.
    let record: Awaited<ReturnType<Store["get"]>>;
    try {
      record = await store.get(recordKey);
    } catch (error) {
      report("lookup", error);
      return refused(Refusal.unavailable, UNAVAILABLE);
    }
    if (record !== undefined && record.fingerprint !== fingerprint) return refused(Refusal.keyReused, REUSED);
    return { kind: "looked_up", found: lookupFound(record, Date.now()) };
  }
  const deadline = Date.now() + call.waitMs;
  let claim: Claim;
  for (;;) {
    try {
      // Step "claim" (docs/claim-protocol.md); the claim layer renews the lease while the tool runs.
      claim = await claimKey({
        store,
        key: recordKey,
        fingerprint,
        leaseMs,
        ttlMs: retentionMs,
        data: JSON.stringify({ scope, key, tool }),
        onRenewError: (error) => report("renew", error),
        // Told by the claim layer as a renewal finds the key taken over, as the owner engine is.
        onLost: () => report("renew", new LeaseLostError(key)),
      });
    } catch (error) {
      report("claim", error);
      return refused(Refusal.unavailable, UNAVAILABLE);
    }
    if (claim.status === "held") break;
    const { record } = claim;
    if (record.fingerprint !== fingerprint) return refused(Refusal.keyReused, REUSED);
    if (record.state === "outcome_unknown") return refused(Refusal.outcomeUnknown, UNKNOWN);
    if (record.state === "completed" && record.result !== null)
      return { kind: "replayed", saved: record.result };
    // Still running elsewhere: wait for its answer while the budget lasts, then say so with a retry hint.
    if (Date.now() + call.pollMs > deadline) return refused(Refusal.keyInFlight, IN_FLIGHT);
    await new Promise((resolve) => setTimeout(resolve, call.pollMs));
  }
  const { hold } = claim;
  if (claim.previous !== undefined && !call.rerunAfterTakeover) {
    // The call that held the key may have run: record its outcome as unknown (step "mark unknown"), keeping its
    // token, so that its result saved late settles the outcome.
    try {
      const { previous } = claim;
      await hold.write(
        unknownAfterTakeover(previous, {
          ttlMs: retentionMs,
          data: withOwnerEvent(previous.data, { type: "taken_over", at: Date.now() }),
        }),
      );
    } catch (error) {
      report("claim", error);
    } finally {
      hold.stop();
    }
    return refused(Refusal.outcomeUnknown, UNKNOWN);
  }

  let result: R;
  try {
    result = await call.run();
  } catch (error) {
    if (hadNoEffect(error)) {
      await release(hold, report);
      return { kind: "no_effect", error };
    }
    // A throw cannot say whether the tool acted before it threw (an email sent, then a connection reset): the
    // outcome is unknown, so it is recorded as such and a retry is refused, never run again (step "mark unknown").
    await markUnknown(hold, retentionMs, report);
    return refused(
      Refusal.outcomeUnknown,
      `${THREW} ${describeThrown(error).replace(/\.$/, "")}. ${UNKNOWN_NEXT}`,
    );
  }
  let text: string | undefined;
  try {
    text = call.serialize(result);
  } catch (error) {
    report("save", error);
  }
  if (text === undefined) {
    await release(hold, report);
    return { kind: "ran", result };
  }
  try {
    // The save-retry rule: retried with backoff under a renewed lease. Taken over meanwhile by a retry that recorded
    // the outcome unknown, the result saved late settles it (unless takers run the tool again).
    await hold.save(
      { state: "completed", token: null, leaseMs: null, result: text, ttlMs: retentionMs },
      call.rerunAfterTakeover ? {} : { late: lateCompletion },
    );
  } catch (error) {
    // The tool ran: its result goes to the client; the key stays locked, so a retry is refused, never rerun.
    report("save", error);
  }
  return { kind: "ran", result };
}

const refused = (refusal: Refusal, text: string) => ({ kind: "refused", refusal, text }) as const;

async function markUnknown(
  hold: Hold,
  retentionMs: number,
  report: (phase: "claim", error: unknown) => void,
): Promise<void> {
  try {
    // The write that must happen: left pending, the key would lapse and a retry take it over (refused as well,
    // unless rerunAfterTakeover, which would run a call that may have acted).
    await hold.save({ state: "outcome_unknown", token: null, leaseMs: null, ttlMs: retentionMs });
  } catch (error) {
    report("claim", error);
  }
}

async function release(hold: Hold, report: (phase: "release", error: unknown) => void): Promise<void> {
  try {
    await hold.release();
  } catch (error) {
    // The key stays claimed until its lease runs out; then a retry takes it over.
    report("release", error);
  }
}

const UNKNOWN_NEXT =
  "It may or may not have taken effect, so it is not run again. Check whether it took effect before calling again " +
  "with a new key.";
const UNKNOWN = `An earlier call with this idempotency key failed or was interrupted while it ran. ${UNKNOWN_NEXT}`;
const THREW = "The tool failed while it ran:";
const UNAVAILABLE =
  "The server could not check this call's idempotency key, so it did not run the tool. Retry it later.";
const REUSED =
  "This idempotency key was already used for another tool or other arguments. Retry the original call unchanged, " +
  "or send this one with a new key.";
const IN_FLIGHT = "A call with this idempotency key is still running. Retry it later to get its result.";
