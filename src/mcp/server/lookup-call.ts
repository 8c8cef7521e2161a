import type { StoreRecord } from "../../store/types.js";
import { JSONRPC_ERROR_SAVED, LOOKUP_META, LOOKUP_STATE_META, LookupState, REPLAYED_META } from "../meta.js";
import type { McpCallToolResult } from "../types.js";
import { InvalidIdempotencyKeyError } from "./invalid-key-error.js";

const PATH = `params._meta["${LOOKUP_META}"]`;

/**
 * Whether a `tools/call` request's `_meta` asks a lookup instead of a run. `true` asks, `false` or nothing runs the
 * call; any other value throws `InvalidIdempotencyKeyError`, so that a lookup spelt wrong is refused, never run.
 */
export function isLookup(meta: { [name: string]: unknown } | undefined): boolean {
  const value = meta?.[LOOKUP_META];
  if (value === undefined || value === false) return false;
  if (value === true) return true;
  throw new InvalidIdempotencyKeyError(
    PATH,
    `${PATH} must be true (a lookup) or absent, got ${JSON.stringify(value)}`,
  );
}

/** What a lookup found: the recorded answer's text for `completed`, a state for the rest. */
export type LookupFound =
  | { readonly state: typeof LookupState.completed; readonly saved: string }
  | { readonly state: Exclude<LookupState, "completed"> };

/**
 * The lookup's answer from the record under the caller's (scope, key), read as a call with the key would be
 * decided (`dedupeCall`): a saved result is `completed`, a live lease `in_flight`, a lapsed one or `outcome_unknown`
 * `outcome_unknown`. Another scope's record is never read: its store key is a hash of (scope, key).
 */
export function lookupFound(record: StoreRecord | undefined, now: number): LookupFound {
  if (record === undefined) return { state: LookupState.unknown };
  if (record.state === "completed" && record.result !== null) {
    return { state: LookupState.completed, saved: record.result };
  }
  if (record.state === "pending" || record.state === "completed") {
    // A lease that ran out is a call that stopped mid-way: the next call with the key would be told so too.
    const lapsed = record.leaseUntil !== null && record.leaseUntil <= now;
    return { state: lapsed ? LookupState.outcomeUnknown : LookupState.inFlight };
  }
  return { state: LookupState.outcomeUnknown };
}

/**
 * The tool result that answers a lookup, the same from `mcpDedupe` and the gateway: the recorded result (a
 * recorded JSON-RPC error as an error result carrying it) for `completed`, an error result with a sentence for the
 * others, each with `"dev.idemkey/lookup-state"` in its `_meta`.
 */
export function lookupResult(found: LookupFound): McpCallToolResult {
  if (found.state !== LookupState.completed) {
    return {
      content: [{ type: "text", text: TEXT[found.state] }],
      isError: true,
      _meta: { [LOOKUP_STATE_META]: found.state },
    };
  }
  const saved = JSON.parse(found.saved) as McpCallToolResult & {
    [JSONRPC_ERROR_SAVED]?: { message?: unknown };
  };
  const error = saved[JSONRPC_ERROR_SAVED];
  if (error !== undefined) {
    return {
      content: [{ type: "text", text: String(error.message ?? "") }],
      isError: true,
      _meta: { [JSONRPC_ERROR_SAVED]: error, [REPLAYED_META]: true, [LOOKUP_STATE_META]: found.state },
    };
  }
  return { ...saved, _meta: { ...saved._meta, [REPLAYED_META]: true, [LOOKUP_STATE_META]: found.state } };
}

const TEXT = {
  in_flight: "A call with this idempotency key is running now: ask again later.",
  outcome_unknown:
    "A call with this idempotency key was interrupted or failed while it ran: this server cannot tell whether it " +
    "took effect.",
  unknown: "This server has no record of a call with this idempotency key from you: it did not run it.",
} as const;
