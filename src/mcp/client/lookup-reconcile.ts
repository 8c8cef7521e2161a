import type { ReconcileResult, ToolContext } from "../../harness/types.js";
import { describe } from "../../options/describe.js";
import { checkNumber } from "../../options/number-option.js";
import {
  IDEMPOTENCY_KEY_META,
  LOOKUP_META,
  LOOKUP_STATE_META,
  LookupState,
  REFUSAL_META,
  REPLAYED_META,
} from "../meta.js";
import type { McpCallToolResult } from "../types.js";
import { callSender, type McpCallClient } from "./send-call.js";
import { resultText } from "./tool-error.js";

export interface McpLookupReconcileOptions<A, R> {
  /** The tool's name on the MCP server, as given to `mcpTool`. */
  name: string;
  /**
   * The tool's result from the recorded one, when the call ran (the recorded result as the server saved it, without
   * the lookup's own `_meta` marks). Return `undefined` to leave the outcome undecided (for a person).
   * @default the recorded result as it is, unless it is an error result (`isError`): undecided
   */
  result?: (recorded: McpCallToolResult, args: A) => R | undefined;
  /**
   * How long the lookup waits for the server's answer, in milliseconds. A lookup that times out throws, which leaves
   * the outcome unknown.
   * @default the SDK's default request timeout (60000)
   */
  timeoutMs?: number;
}

/**
 * A ready `reconcile` for an MCP tool whose server dedupes with `mcpDedupe` (or sits behind idemkey's MCP gateway):
 * sends the call again, unchanged, with its key and `"dev.idemkey/lookup": true` in `_meta`, which the server
 * answers from its record of the key without running the tool. `completed`: done, with the recorded result;
 * `unknown` (no record of the key in this caller's scope): not done; `in_flight` or `outcome_unknown`: it cannot
 * tell (yet). A lookup that fails or is refused (the server is down, the key was used for another call, an answer
 * without `"dev.idemkey/lookup-state"`) throws, which leaves the outcome unknown.
 *
 * Use it only with a server that answers lookups: to any other the lookup is a plain call, which runs the tool.
 * The client must be the caller the original call came from (the same credentials), since the server answers
 * only about the caller's own keys: another caller's key reads as `unknown`.
 *
 * @example
 * const transfer = mcpTool(client, {
 *   name: "transfer",
 *   effect: "unguarded",
 *   reconcile: mcpLookupReconcile(client, { name: "transfer" }),
 * });
 */
export function mcpLookupReconcile<A extends { [name: string]: unknown }, R = McpCallToolResult>(
  client: McpCallClient,
  options: McpLookupReconcileOptions<A, R>,
): (args: A, ctx: ToolContext) => Promise<ReconcileResult<R>> {
  if (typeof client !== "object" || client === null || typeof client.callTool !== "function") {
    throw new TypeError(
      "mcpLookupReconcile: client must be a connected MCP Client (it has no callTool method)",
    );
  }
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`mcpLookupReconcile: options must be an object, got ${describe(options)}`);
  }
  const { name, result, timeoutMs } = options;
  if (typeof name !== "string" || name.length === 0) {
    throw new TypeError(
      `mcpLookupReconcile: options.name must be the MCP tool's name, a non-empty string, got ${describe(name)}`,
    );
  }
  if (result !== undefined && typeof result !== "function") {
    throw new TypeError(`mcpLookupReconcile: options.result must be a function, got ${describe(result)}`);
  }
  if (timeoutMs !== undefined)
    checkNumber("mcpLookupReconcile: options.timeoutMs", timeoutMs, { exclusive: true });
  const toResult = result ?? defaultResult<R>;
  const send = callSender(client);

  return async function mcpLookupReconcile(args, ctx) {
    const answer = await send(
      { name, arguments: args, _meta: { [IDEMPOTENCY_KEY_META]: ctx.idempotencyKey, [LOOKUP_META]: true } },
      ctx.signal,
      timeoutMs,
    );
    const meta = answer._meta ?? {};
    const state = meta[LOOKUP_STATE_META];
    if (meta[REFUSAL_META] !== undefined) {
      throw new Error(
        `the lookup of "${name}" was refused (${String(meta[REFUSAL_META])}): ${resultText(answer)}`,
      );
    }
    if (state === LookupState.unknown) return { status: "not_done", evidence: { lookup: "unknown" } };
    if (state === LookupState.inFlight || state === LookupState.outcomeUnknown) return undefined;
    if (state !== LookupState.completed) {
      throw new Error(
        `the server did not answer the lookup of "${name}" (no "${LOOKUP_STATE_META}" in its answer): it does not ` +
          "answer lookups, and may have run the call",
      );
    }
    const { [LOOKUP_STATE_META]: _state, [REPLAYED_META]: _replayed, ...rest } = meta;
    const recorded: McpCallToolResult = { ...answer };
    if (Object.keys(rest).length > 0) recorded._meta = rest;
    else delete recorded._meta;
    const value = toResult(recorded, args);
    if (value === undefined) return undefined;
    return { status: "done", result: value, evidence: { lookup: "completed" } };
  };
}

function defaultResult<R>(recorded: McpCallToolResult): R | undefined {
  return recorded.isError === true ? undefined : (recorded as R);
}
