import type { LedgerEntry } from "../harness/types.js";
import { canonicalize } from "../key/canonicalize.js";
import { RecordState } from "../store/types.js";
import type { Redactor } from "./redact.js";
import type { Observation, Row, Snapshot } from "./snapshot.js";

/** The JSON shapes the data endpoints answer with; the page reads these and nothing else. */

export const STATES: readonly RecordState[] = Object.values(RecordState);

/** What `/api/config` answers: how the page should behave, read once when it loads. */
export interface PageConfig {
  label: string;
  readOnly: boolean;
  /** The name actions are recorded under when the page gives none. */
  user: string;
  redact: readonly string[];
  tokenHeader: string;
  pollMs: number;
  states: readonly RecordState[];
}

/** One entry of a call's audit trail. */
export type CallEvent = LedgerEntry["events"][number];

/** Where a record stands in the claim protocol, as the inspector shows a ledger call and an owner's key alike. */
export interface RecordProgress {
  state: RecordState;
  attempts: number;
  /** Short name of the claim holding a pending record (`holderOf` its token), `null` when none holds it. */
  holder: string | null;
  leaseUntil: number | null;
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
}

export interface CallSummary extends RecordProgress {
  key: string;
  taskId: string;
  tool: string;
  effect: string;
  step?: string | number;
  /** From the first claim to the completion, for a completed call. */
  durationMs: number | null;
  /** The latest event of the audit trail, if any. */
  lastEvent: CallEvent | null;
}

/**
 * The audit trail as shown: every string in it (a denial's reason, an unknown outcome's error, who acted) through
 * the redaction, and a reconciler's evidence, the owner's answer, masked as a result is.
 */
export function trail(events: LedgerEntry["events"], redact: Redactor): LedgerEntry["events"] {
  return events.map((event) =>
    redact.strings(
      event.type === "resolved" && event.evidence !== undefined
        ? { ...event, evidence: redact(event.evidence) }
        : event,
    ),
  );
}

/** A call's row as shown: every string through the redaction, so that a filter on it matches what a person sees. */
export function summary({ entry, holder }: Row, redact: Redactor): CallSummary {
  const out: CallSummary = {
    key: entry.key,
    taskId: entry.taskId,
    tool: entry.tool,
    effect: entry.effect,
    state: entry.state,
    attempts: entry.attempts,
    holder,
    leaseUntil: entry.leaseUntil,
    createdAt: entry.createdAt,
    updatedAt: entry.updatedAt,
    expiresAt: entry.expiresAt,
    durationMs: entry.state === "completed" ? entry.updatedAt - entry.createdAt : null,
    lastEvent: trail(entry.events.slice(-1), redact)[0] ?? null,
  };
  if (entry.step !== undefined) out.step = entry.step;
  return redact.strings(out);
}

export interface CallDetail extends CallSummary {
  /**
   * The hash of the recorded arguments, or `null` when a member of them was masked: beside the other arguments,
   * it would let a masked value with few possibilities (a 3-digit `cvc`) be found by hashing each. The key is a
   * hash of the same arguments and cannot be withheld, being the call's name; see the README on low-entropy secrets.
   */
  argsHash: string | null;
  /** Whether anything in the arguments was masked. */
  argsMasked: boolean;
  /** The recorded arguments with the redacted fields masked. */
  args: unknown;
  /** Their RFC 8785 canonical form (of the masked arguments), as the key derivation saw them. */
  argsCanonical: string;
  /** The recorded result, masked likewise; absent unless completed. */
  result?: unknown;
  events: LedgerEntry["events"];
  observations: readonly Observation[];
}

export function detail(row: Row, redact: Redactor, observations: readonly Observation[]): CallDetail {
  const args = redact(row.entry.args);
  const argsCanonical = canonicalize(args);
  const argsMasked = argsCanonical !== canonicalize(row.entry.args);
  const out: CallDetail = {
    ...summary(row, redact),
    argsHash: argsMasked ? null : row.entry.argsHash,
    argsMasked,
    args,
    argsCanonical,
    events: trail(row.entry.events, redact),
    observations,
  };
  if ("result" in row.entry) out.result = redact(row.entry.result);
  return out;
}

/** What `/api/counts` answers (and the live stream's `change` event carries, with the keys that changed). */
export type Counts = ReturnType<typeof counts>;
/** What `/api/calls` answers. */
export type CallList = ReturnType<typeof listCalls>;
/** What `/api/tasks` answers. */
export type TaskList = ReturnType<typeof listTasks>;
/** What `/api/tasks/:taskId/timeline` answers. */
export type Timeline = ReturnType<typeof timeline>;

export function counts(snapshot: Snapshot, redact: Redactor) {
  const byState = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<RecordState, number>;
  const tools = new Set<string>();
  for (const { entry } of snapshot.rows) {
    byState[entry.state]++;
    tools.add(redact.text(entry.tool));
  }
  return {
    version: snapshot.version,
    at: snapshot.at,
    counts: byState,
    total: snapshot.rows.length,
    unreadable: snapshot.unreadable,
    truncated: snapshot.truncated,
    tools: [...tools].sort(),
  };
}

/** What `/api/calls` filters on: each as shown (masked), never as recorded, so no filter confirms a masked value. */
export interface CallFilter {
  task?: string;
  tool?: string;
  state?: RecordState;
}

/** Newest first: the call a person is looking for is usually the one that just parked or failed. */
export function listCalls(
  snapshot: Snapshot,
  filter: CallFilter,
  offset: number,
  limit: number,
  redact: Redactor,
) {
  const matching = snapshot.rows
    .filter(
      ({ entry }) =>
        (filter.task === undefined || redact.text(entry.taskId) === filter.task) &&
        (filter.tool === undefined || redact.text(entry.tool) === filter.tool) &&
        (filter.state === undefined || entry.state === filter.state),
    )
    .sort((a, b) => b.entry.createdAt - a.entry.createdAt || (a.entry.key < b.entry.key ? -1 : 1));
  return {
    version: snapshot.version,
    total: matching.length,
    offset,
    limit,
    truncated: snapshot.truncated,
    calls: matching.slice(offset, offset + limit).map((row) => summary(row, redact)),
  };
}

/**
 * The tasks, latest activity first, with their calls counted per state. A task is its id as shown: two whose ids
 * differ only in a masked part are listed (and drawn) as one.
 */
export function listTasks(snapshot: Snapshot, limit: number, redact: Redactor) {
  const tasks = new Map<
    string,
    {
      taskId: string;
      calls: number;
      counts: Partial<Record<RecordState, number>>;
      firstAt: number;
      lastAt: number;
    }
  >();
  for (const { entry } of snapshot.rows) {
    const taskId = redact.text(entry.taskId);
    let task = tasks.get(taskId);
    if (task === undefined) {
      task = {
        taskId,
        calls: 0,
        counts: {},
        firstAt: entry.createdAt,
        lastAt: entry.updatedAt,
      };
      tasks.set(taskId, task);
    }
    task.calls++;
    task.counts[entry.state] = (task.counts[entry.state] ?? 0) + 1;
    task.firstAt = Math.min(task.firstAt, entry.createdAt);
    task.lastAt = Math.max(task.lastAt, entry.updatedAt);
  }
  const sorted = [...tasks.values()].sort((a, b) => b.lastAt - a.lastAt || (a.taskId < b.taskId ? -1 : 1));
  return {
    version: snapshot.version,
    total: sorted.length,
    truncated: snapshot.truncated,
    tasks: sorted.slice(0, limit),
  };
}

/**
 * What the timeline chart draws for one task (by its id as shown): its calls in the order they began, each with
 * its times, audit trail (approvals, denials, unknown outcomes, resolutions) and what the inspector saw change
 * (takeovers, attempts).
 */
export function timeline(
  snapshot: Snapshot,
  taskId: string,
  observations: (key: string) => readonly Observation[],
  now: number,
  redact: Redactor,
) {
  const calls = snapshot.rows
    .filter(({ entry }) => redact.text(entry.taskId) === taskId)
    .sort((a, b) => a.entry.createdAt - b.entry.createdAt || (a.entry.key < b.entry.key ? -1 : 1))
    .map((row) => ({
      ...summary(row, redact),
      events: trail(row.entry.events, redact),
      observations: observations(row.entry.key),
    }));
  const from = Math.min(...calls.map((c) => c.createdAt));
  const to = Math.max(...calls.map((c) => Math.max(c.updatedAt, ...c.events.map((e) => e.at))));
  return { version: snapshot.version, taskId, now, from, to, calls };
}
