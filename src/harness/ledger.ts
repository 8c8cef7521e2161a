import { LedgerStateError } from "../errors/ledger-state-error.js";
import { StorePrefix } from "../store/scoped-key.js";
import type { StoreRecord } from "../store/types.js";
import { argsFromText } from "./record/args.js";
import type { LedgerCall, LedgerVersion } from "./record/types.js";
import { decodeV1, encodeV1 } from "./record/v1.js";
import { decodeV2, encodeV2 } from "./record/v2.js";
import type { LedgerEntry, LedgerEvent } from "./types.js";

// The one module that makes, changes and reads a ledger record's data; the formats are in record/ (one file each).

/** The ledger's namespace in a store shared with the owner-side middleware. */
export const PREFIX = StorePrefix.ledger;

/** The audit trail keeps the latest entries only, so that a record flapping between states stays small. */
const MAX_EVENTS = 50;

const ENCODERS: Record<LedgerVersion, (call: LedgerCall) => string> = { 1: encodeV1, 2: encodeV2 };
// A Map, so that a `v` read from the store can never name an Object.prototype member.
const DECODERS = new Map<unknown, (d: Record<string, unknown>) => LedgerCall | undefined>([
  [1, decodeV1],
  [2, decodeV2],
]);
const READS = [...DECODERS.keys()] as number[];

/** Checks the `ledgerVersion` option. */
export function checkLedgerVersion(value: unknown): LedgerVersion {
  if (value === undefined) return 1;
  if (value !== 1 && value !== 2) {
    throw new TypeError(`options.ledgerVersion must be 1 or 2, got ${String(value)}`);
  }
  return value;
}

/** What a record a call creates carries: the call, with an empty audit trail. */
export function newCall(
  call: Omit<LedgerCall, "args" | "events" | "extra"> & { /** The canonical JSON text. */ args: string },
): LedgerCall {
  const { taskId, tool, effect, step, argsHash, args } = call;
  const created: LedgerCall = { taskId, tool, effect, argsHash, args: argsFromText(args), events: [] };
  if (step !== undefined) created.step = step;
  return created;
}

/** The record's data in the format `version`, whatever format it was read from. */
export function encodeData(call: LedgerCall, version: LedgerVersion): string {
  return ENCODERS[version](call);
}

/** The call a record stands for, read from any format this idemkey knows. */
export function decodeData(record: StoreRecord): LedgerCall {
  const key = record.key.slice(PREFIX.length);
  let data: unknown;
  try {
    data = JSON.parse(record.data ?? "null");
  } catch (error) {
    throw new LedgerStateError({
      key,
      state: record.state,
      reason: "unreadable",
      record: record.key,
      cause: error,
    });
  }
  const d = data as Record<string, unknown> | null;
  const v = typeof d === "object" && d !== null && !Array.isArray(d) ? d.v : undefined;
  const decode = DECODERS.get(v);
  if (decode === undefined && typeof v === "number" && Number.isInteger(v) && v > Math.max(...READS)) {
    throw new LedgerStateError({
      key,
      state: record.state,
      reason: "newer",
      record: record.key,
      format: v,
      versions: READS,
    });
  }
  const call = decode?.(d!);
  if (call === undefined) {
    throw new LedgerStateError({
      key,
      state: record.state,
      reason: "unrecognised",
      record: record.key,
      versions: READS,
    });
  }
  return call;
}

/** The call with one more event in its audit trail (the oldest dropped past the limit). */
export function addEvent(call: LedgerCall, event: LedgerEvent): LedgerCall {
  const events = [...call.events, event];
  return { ...call, events: events.length > MAX_EVENTS ? events.slice(-MAX_EVENTS) : events };
}

/** The record's data with one more event, in the format `version`. */
export function withEvent(call: LedgerCall, event: LedgerEvent, version: LedgerVersion): string {
  return encodeData(addEvent(call, event), version);
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
    args: data.args.value(),
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
  call: LedgerCall,
  type: T,
): Extract<LedgerEvent, { type: T }> | undefined {
  for (let i = call.events.length - 1; i >= 0; i--) {
    const event = call.events[i]!;
    if (event.type === type) return event as Extract<LedgerEvent, { type: T }>;
  }
  return undefined;
}
