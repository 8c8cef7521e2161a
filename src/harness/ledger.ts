import { LedgerStateError } from "../errors/ledger-state-error.js";
import type { StoreRecord } from "../store/types.js";
import type { Effect, LedgerEntry, LedgerEvent } from "./types.js";

/** The ledger's namespace in a store shared with the owner-side middleware. */
export const PREFIX = "call:";

/** The audit trail keeps the latest entries only, so that a record flapping between states stays small. */
const MAX_EVENTS = 50;

/**
 * The JSON in a ledger record's `data`, version 1. Read by `harness.get` and by inspectors; new fields may be added,
 * existing ones keep their meaning.
 * - `taskId`, `tool`, `effect`, `step`: what the call was.
 * - `argsHash`: SHA-256 hex of `args`; a later call with the same key whose arguments hash differently is the same
 *   call by its identity and replays this one (its `replayed` event says `argsDiffer: true`).
 * - `args`: the canonical JSON text of the full arguments, run again as they are on a takeover.
 * - `events`: the audit trail of state changes (approvals, denials, resolutions, unknown outcomes), with who and when.
 */
export interface LedgerData {
  v: 1;
  taskId: string;
  tool: string;
  effect: Effect;
  step?: string | number;
  argsHash: string;
  args: string;
  events: LedgerEvent[];
}

export function encodeData(data: LedgerData): string {
  return JSON.stringify(data);
}

export function decodeData(record: StoreRecord): LedgerData {
  const key = record.key.slice(PREFIX.length);
  let data: unknown;
  try {
    data = JSON.parse(record.data ?? "null");
  } catch (error) {
    throw new LedgerStateError(key, record.state, `The ledger record ${record.key} has unreadable data`, {
      cause: error,
    });
  }
  const d = data as Partial<LedgerData> | null;
  if (
    d === null ||
    typeof d !== "object" ||
    d.v !== 1 ||
    typeof d.taskId !== "string" ||
    typeof d.args !== "string" ||
    !Array.isArray(d.events)
  ) {
    throw new LedgerStateError(
      key,
      record.state,
      `The record ${record.key} is not an idemkey ledger record (v1)`,
    );
  }
  return d as LedgerData;
}

/** The data with one more event in its audit trail (the oldest dropped past the limit). */
export function addEvent(data: LedgerData, event: LedgerEvent): LedgerData {
  const events = [...data.events, event];
  return { ...data, events: events.length > MAX_EVENTS ? events.slice(-MAX_EVENTS) : events };
}

export function withEvent(data: LedgerData, event: LedgerEvent): string {
  return encodeData(addEvent(data, event));
}

export function toEntry(record: StoreRecord): LedgerEntry {
  const data = decodeData(record);
  const entry: LedgerEntry = {
    key: record.key.slice(PREFIX.length),
    state: record.state,
    taskId: data.taskId,
    tool: data.tool,
    effect: data.effect,
    argsHash: data.argsHash,
    args: JSON.parse(data.args),
    attempts: record.attempts,
    leaseUntil: record.leaseUntil,
    events: data.events,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    expiresAt: record.expiresAt,
  };
  if (data.step !== undefined) entry.step = data.step;
  // The empty text is a tool's `undefined` ("no result"); null is a result that was not JSON.
  if (record.state === "completed" && record.result !== null && record.result !== "") {
    entry.result = JSON.parse(record.result);
  }
  return entry;
}

/** The latest event of a type, for the denial reason and the like. */
export function lastEvent<T extends LedgerEvent["type"]>(
  data: LedgerData,
  type: T,
): Extract<LedgerEvent, { type: T }> | undefined {
  for (let i = data.events.length - 1; i >= 0; i--) {
    const event = data.events[i]!;
    if (event.type === type) return event as Extract<LedgerEvent, { type: T }>;
  }
  return undefined;
}
