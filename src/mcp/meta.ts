/*
 * The `_meta` names idemkey puts on MCP messages. The MCP specification (revision 2025-11-25, Basic > General fields
 * > `_meta`, https://modelcontextprotocol.io/specification/2025-11-25/basic/index#meta) says a key is an optional
 * prefix and a name. The prefix is labels separated by dots and followed by a slash, each label starting with a
 * letter and ending with a letter or digit, in reverse DNS notation; any prefix whose second label is
 * `modelcontextprotocol` or `mcp` is reserved for MCP. The name begins and ends with an alphanumeric character and may
 * hold `-`, `_` and `.` in between. Revision 2025-06-18 reserved any prefix with `modelcontextprotocol` or `mcp`
 * followed by a label; `dev.idemkey/` passes both rules, and only names from it are used here.
 */

/**
 * Where a tool call's request `_meta` carries its idempotency key: `params._meta["dev.idemkey/idempotency-key"]`.
 * `mcpTool` sends it; `idempotencyKeyOf` and `mcpDedupe` read it on the server.
 */
export const IDEMPOTENCY_KEY_META = "dev.idemkey/idempotency-key";

/** Set to `true` in the `_meta` of a tool result that `mcpDedupe` replayed from its store instead of running the tool. */
export const REPLAYED_META = "dev.idemkey/replayed";

/**
 * Set in the `_meta` of an error result with which `mcpDedupe` refused a call without running the tool; the value is
 * one of `Refusal`. `mcpTool` turns it into the matching error on the client.
 */
export const REFUSAL_META = "dev.idemkey/refusal";

/**
 * Set to `true` in the `_meta` of an error result to say that the call certainly had no effect: `mcpDedupe` sets it
 * when the handler threw an error with `noEffect: true` (a `ToolCallError("insufficient funds", { noEffect: true })`)
 * and released the key. `mcpTool` reads it as the owner's word: the key is freed, also for an `unguarded` tool, and
 * the identical call may run later. Any other error result says nothing about the effect. A server of your own may
 * set it on an error result it returns before doing anything.
 */
export const NO_EFFECT_META = "dev.idemkey/no-effect";

/**
 * Set by the MCP gateway (`idemkey gateway mcp`) on a `key_in_flight` or `unavailable` refusal: how many
 * milliseconds to wait before retrying the same call with the same key.
 */
export const RETRY_AFTER_META = "dev.idemkey/retry-after-ms";

/**
 * Where the MCP gateway saves a JSON-RPC error the upstream answered a keyed `tools/call` with (`{ code, message,
 * data }`), so that a retry gets the same error instead of a second call upstream.
 */
export const JSONRPC_ERROR_SAVED = "dev.idemkey/jsonrpc-error";

/**
 * Set to `true` in a `tools/call` request's `_meta`, beside the idempotency key, to ask instead of run: "did the call
 * with this key happen?". `mcpDedupe` and the MCP gateway answer it from their record of the key in the caller's own
 * scope and never run the tool (the gateway never forwards it upstream). The request is the call itself (same tool,
 * same arguments), so that a key used for another call is refused as `key_reused`. Send it only to a server that
 * dedupes with idemkey: any other server runs it as a plain call. `mcpLookupReconcile` sends it.
 */
export const LOOKUP_META = "dev.idemkey/lookup";

/**
 * Set in the `_meta` of the answer to a lookup (`"dev.idemkey/lookup": true`); the value is one of `LookupState`.
 * For `completed` the answer is the recorded result itself (also marked `"dev.idemkey/replayed": true`); for the
 * others it is an error result with a sentence, so that no output schema applies to it.
 */
export const LOOKUP_STATE_META = "dev.idemkey/lookup-state";

/** What a lookup found of a key, in the caller's own scope. */
export const LookupState = {
  /** The call ran and its result was recorded: the answer is that result. */
  completed: "completed",
  /** A call with the key is running now. */
  inFlight: "in_flight",
  /** A call with the key was interrupted or threw: the server cannot tell whether it took effect either. */
  outcomeUnknown: "outcome_unknown",
  /** No record of the key in the caller's scope: it never ran here (or its record expired). Another caller's key reads so too. */
  unknown: "unknown",
} as const;
export type LookupState = (typeof LookupState)[keyof typeof LookupState];

/** Why `mcpDedupe` refused a tool call. The tool did not run in any of these cases. */
export const Refusal = {
  /** The key in `_meta` is not a string of 1 to 255 visible ASCII characters without `"`, `,` or `\`. */
  keyInvalid: "key_invalid",
  /** The call had no key and `required` is set. */
  keyMissing: "key_missing",
  /** The key was already used for another tool or other arguments: retrying with it can never succeed. */
  keyReused: "key_reused",
  /** A call with the key is still running: retry it later to get its result. */
  keyInFlight: "key_in_flight",
  /** The store could not be reached: retry later with the same key. */
  unavailable: "unavailable",
  /**
   * A call with the key was interrupted (its server died, or lost the store past its lease) or its handler threw
   * without saying `noEffect: true`, and it may have taken effect: it is not run again. Check whether it took effect.
   */
  outcomeUnknown: "outcome_unknown",
} as const;
export type Refusal = (typeof Refusal)[keyof typeof Refusal];
