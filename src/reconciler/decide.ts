import { holdClaim } from "../claim/hold.js";
import type { Hold } from "../claim/types.js";
import { NO_RESULT } from "../harness/hold.js";
import { decodeData, encodeData, PREFIX, withEvent } from "../harness/ledger.js";
import type { LedgerCall, LedgerVersion } from "../harness/record/types.js";
import { Effect, type LedgerEvent, type ReconcileResult, type Tool } from "../harness/types.js";
import { canonicalizeAt, DEFAULT_MAX_DEPTH } from "../key/canonicalize.js";
import { reporter } from "../options/report.js";
import type { RecordPatch, StoreRecord } from "../store/types.js";
import type { ReconcilerEvent } from "./events.js";
import type { Resolved } from "./options.js";

/** What became of one record a sweep looked at. */
export type Outcome = "done" | "not_done" | "undecided" | "skipped" | "conflict" | "failed";

type Taken = { hold: Hold; record: StoreRecord; data: LedgerCall; fromPending: boolean };

/**
 * One record, start to end: is it ours to ask (an unknown outcome, or an unguarded call whose process stopped after
 * it started), take it (the claim protocol: one compare-and-set that one reconciler of a fleet wins), ask the tool's
 * `reconcile`, and write the decision with the audit entry in the same conditional write. Between the take and the
 * write the record is pending under this reconciler's token with its attempts counted, so a crash leaves it to be
 * taken as unknown again.
 */
export async function decide(core: Resolved, seen: StoreRecord, signal: AbortSignal): Promise<Outcome> {
  const key = seen.key.slice(PREFIX.length);
  // Silent without a hook (reporter would turn each event into a warning); a hook that throws is warned about.
  const hook = core.onEvent;
  const report =
    hook === undefined
      ? () => {}
      : reporter(hook, "onEvent", (e: ReconcilerEvent) => `a reconciler "${e.type}" event`);
  let data: LedgerCall;
  try {
    data = decodeData(seen);
  } catch {
    // A record this idemkey cannot read (a newer format) is not ours to decide.
    return "skipped";
  }
  if (!isCandidate(core, seen, data)) return "skipped";

  let taken: Taken | undefined;
  try {
    taken = await take(core, seen);
  } catch (error) {
    report({ type: "failed", key, error });
    return "failed";
  }
  if (taken === undefined) {
    report({ type: "conflict", key });
    return "conflict";
  }

  const tool = core.tools.get(taken.data.tool);
  const why = unaskable(taken.data, tool);
  const found = why === undefined ? await ask(tool!, key, taken, signal) : { undecided: why };
  const version = versionOf(taken.record);
  const at = core.clock();
  let patch: RecordPatch;
  // None when stopping: nothing was decided, and nothing happened to tell.
  let event: ReconcilerEvent | undefined;
  const base = { key, taskId: taken.data.taskId, tool: taken.data.tool, by: core.id };
  if ("stopped" in found) {
    // Stopping: put the record back as undecided as it was, no try counted.
    patch = { state: "outcome_unknown", token: null, leaseMs: null, data: stoppedData(taken, at, version) };
    event = undefined;
  } else if ("undecided" in found) {
    const previous = lastUndecided(taken.data);
    const tries = (previous?.tries ?? 0) + 1;
    const nextAt = at + Math.min(core.maxDelayMs, core.minDelayMs * 2 ** (tries - 1));
    const note: LedgerEvent = {
      type: "reconcile_undecided",
      at,
      by: core.id,
      reason: found.undecided,
      tries,
      nextAt,
    };
    // The note replaces the previous one: a record asked hourly for a week keeps its trail of real changes.
    const trail =
      previous === undefined ? taken.data : { ...taken.data, events: taken.data.events.slice(0, -1) };
    patch = { state: "outcome_unknown", token: null, leaseMs: null, data: withEvent(trail, note, version) };
    event = { type: "undecided", ...base, reason: found.undecided, tries, nextAt };
  } else {
    const resolved: LedgerEvent = {
      type: "resolved",
      at,
      by: core.id,
      how: "reconcile",
      outcome: found.outcome,
      ...(found.evidence === undefined ? {} : { evidence: found.evidence }),
    };
    const common = {
      token: null,
      leaseMs: null,
      ttlMs: core.retentionMs,
      data: withEvent(taken.data, resolved, version),
    };
    patch =
      found.outcome === "done"
        ? { state: "completed", result: found.result, ...common }
        : // Approved, as `harness.resolve({ retry: true })` leaves it: the next call with the key runs it.
          { state: "approved", ...common };
    event = {
      type: "reconciled",
      ...base,
      outcome: found.outcome,
      ...(found.evidence === undefined ? {} : { evidence: found.evidence }),
    };
  }
  let written: StoreRecord | undefined;
  try {
    written = await taken.hold.save(patch);
  } catch (error) {
    // Left pending under a lapsing lease with its attempts counted: the next sweep takes it as unknown again.
    report({ type: "failed", key, error });
    return "failed";
  }
  if (written === undefined) {
    report({ type: "conflict", key });
    return "conflict";
  }
  if (event !== undefined) report(event);
  if ("stopped" in found) return "skipped";
  return "undecided" in found ? "undecided" : found.outcome;
}

/** Whether a listed record is one a reconciler decides now (the take checks again, atomically). */
function isCandidate(core: Resolved, record: StoreRecord, data: LedgerCall): boolean {
  const now = core.clock();
  if (record.state === "pending") {
    // A pending call whose process stopped before it sent anything, or a keyed one, is safe for its next call to
    // take over and run: only an unguarded call that started has an outcome to find out.
    const lapsed = record.leaseUntil !== null && record.leaseUntil <= now;
    if (!lapsed || record.attempts === 0 || data.effect !== Effect.unguarded) return false;
  } else if (record.state !== "outcome_unknown") {
    return false;
  }
  const previous = lastUndecided(data);
  return previous === undefined || previous.nextAt <= now;
}

/**
 * The take, by the claim protocol: an unknown record by a compare-and-set on its state, a lapsed pending one by a
 * claim, which takes it over only while its lease is still lapsed. Either way one taker wins; `undefined` for the
 * others.
 */
async function take(core: Resolved, seen: StoreRecord): Promise<Taken | undefined> {
  const token = globalThis.crypto.randomUUID();
  const spec = {
    store: core.store,
    key: seen.key,
    fingerprint: seen.fingerprint,
    leaseMs: core.leaseMs,
    ttlMs: core.retentionMs,
  };
  if (seen.state === "outcome_unknown") {
    const record = await core.store.update(
      seen.key,
      { state: "outcome_unknown" },
      { state: "pending", token, leaseMs: core.leaseMs },
    );
    if (record === undefined) return undefined;
    return { hold: holdClaim(spec, token), record, data: decodeData(record), fromPending: false };
  }
  const claimed = await core.store.claim(seen.key, {
    fingerprint: seen.fingerprint,
    token,
    leaseMs: core.leaseMs,
    ttlMs: core.leaseMs + core.retentionMs,
    data: seen.data,
  });
  if (claimed.status === "exists") return undefined;
  if (claimed.status === "claimed") {
    // The record went (released, or expired) between the list and the claim: nothing to decide, and this claim
    // must not stand in for a call.
    await core.store.delete(seen.key, { token, state: "pending" });
    return undefined;
  }
  const hold = holdClaim(spec, token);
  if (claimed.previous.attempts === 0) {
    // Nothing was sent after all: hand it back lapsed, for its next call to run.
    hold.stop();
    await core.store.update(seen.key, { token, state: "pending" }, { leaseMs: 0 });
    return undefined;
  }
  const data = decodeData(claimed.record);
  const event: LedgerEvent = {
    type: "taken_over",
    at: core.clock(),
    previousAttempts: claimed.previous.attempts,
  };
  return {
    hold,
    record: claimed.record,
    data: { ...data, events: [...data.events, event] },
    fromPending: true,
  };
}

/** Why the record cannot be asked about, or `undefined` when its tool's reconcile can be asked. */
function unaskable(data: LedgerCall, tool: Tool<never, unknown> | undefined): string | undefined {
  if (tool === undefined) return `no tool named ${JSON.stringify(data.tool)} among this reconciler's tools`;
  if (tool.reconcile === undefined) return `tool ${JSON.stringify(data.tool)} has no reconcile`;
  return undefined;
}

type Found =
  | { outcome: "done"; result: string; evidence: unknown }
  | { outcome: "not_done"; evidence: unknown }
  | { undecided: string }
  | { stopped: true };

async function ask(
  tool: Tool<never, unknown>,
  key: string,
  taken: Taken,
  signal: AbortSignal,
): Promise<Found> {
  let found: ReconcileResult<unknown>;
  try {
    found = await tool.reconcile!(taken.data.args.value() as never, {
      idempotencyKey: key,
      taskId: taken.data.taskId,
      tool: tool.name,
      attempt: taken.record.attempts,
      signal,
    });
  } catch (error) {
    if (signal.aborted) return { stopped: true };
    return { undecided: `reconcile threw: ${describeError(error)}` };
  }
  if (found === undefined) {
    if (signal.aborted) return { stopped: true };
    return { undecided: "reconcile could not tell" };
  }
  if (
    typeof found !== "object" ||
    found === null ||
    (found.status !== "done" && found.status !== "not_done")
  ) {
    return {
      undecided:
        'reconcile answered neither { status: "done", result }, { status: "not_done" } nor undefined',
    };
  }
  let evidence: unknown;
  try {
    evidence =
      found.evidence === undefined
        ? undefined
        : JSON.parse(canonicalizeAt(found.evidence, "$.evidence", DEFAULT_MAX_DEPTH));
  } catch (error) {
    return { undecided: `reconcile gave evidence that is not JSON: ${describeError(error)}` };
  }
  if (found.status === "not_done") return { outcome: "not_done", evidence };
  try {
    const result =
      found.result === undefined ? NO_RESULT : canonicalizeAt(found.result, "$.result", DEFAULT_MAX_DEPTH);
    return { outcome: "done", result, evidence };
  } catch (error) {
    return { undecided: `reconcile said done with a result that is not JSON: ${describeError(error)}` };
  }
}

function lastUndecided(data: LedgerCall): Extract<LedgerEvent, { type: "reconcile_undecided" }> | undefined {
  const last = data.events[data.events.length - 1];
  return last?.type === "reconcile_undecided" ? last : undefined;
}

/** The data a record taken from pending goes back with: it is unknown now, and the trail says why. */
function stoppedData(taken: Taken, at: number, version: LedgerVersion): string {
  if (!taken.fromPending) return encodeData(taken.data, version);
  const event: LedgerEvent = {
    type: "outcome_unknown",
    at,
    error: `the process running attempt ${taken.record.attempts} stopped while it was pending`,
  };
  return withEvent(taken.data, event, version);
}

/** The format the record was written in, kept: the reconciler does not know which one the fleet reads. */
function versionOf(record: StoreRecord): LedgerVersion {
  return record.data?.startsWith('{"v":2') ? 2 : 1;
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
