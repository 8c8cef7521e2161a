import { IdempotencyConflictError } from "../../errors/idempotency-conflict-error.js";
import { OutcomeUnknownError } from "../../errors/outcome-unknown-error.js";
import { ToolCallError } from "../../errors/tool-call-error.js";
import { defineTool } from "../../harness/define-tool.js";
import type { Tool, ToolContext, ToolDefinition } from "../../harness/types.js";
import { checkNumber } from "../../options/number-option.js";
import { IDEMPOTENCY_KEY_META, NO_EFFECT_META, REFUSAL_META, Refusal } from "../meta.js";
import type { McpCallToolResult } from "../types.js";
import { callSender, type McpCallClient } from "./send-call.js";
import { McpToolError, resultText } from "./tool-error.js";

export type { McpCallClient, McpCallParams } from "./send-call.js";

/** The arguments of an MCP tool call: a JSON object, sent to the server as they are. */
export type McpArguments = { [name: string]: unknown };

export interface McpToolOptions<A extends McpArguments = McpArguments>
  extends Omit<ToolDefinition<A, McpCallToolResult>, "name" | "run"> {
  /** The tool's name on the MCP server. */
  name: string;
  /**
   * The tool name the idempotency key is derived from. Set it when the harness talks to several MCP servers that
   * have a tool of the same name (`create_issue` on two trackers), so that the same call to each gets its own key
   * and ledger record: `"github.create_issue"`.
   * @default name
   */
  keyName?: string;
  /**
   * How long one attempt waits for the server's answer, in milliseconds, before it fails with the SDK's request
   * timeout; the harness then retries it with the same key (a `keyed` tool) or records its outcome as unknown (an
   * `unguarded` one).
   * @default the SDK's default request timeout (60000)
   */
  timeoutMs?: number;
}

/**
 * Turns a tool of a connected MCP client into a tool for `harness.call`. Each call sends the arguments unchanged
 * and the idempotency key in the request's `_meta` under `"dev.idemkey/idempotency-key"`, so a server that honours
 * it (with `mcpDedupe`, or by forwarding `idempotencyKeyOf(extra)` to the system it writes to) runs a repeated call
 * once. The model never sees the key: it is not in the tool's arguments or schema.
 *
 * `effect` is what the harness may assume when it repeats a call: `keyed` only when the server honours the key,
 * `idempotent` or `read` only when you know the tool to be so. The server's own annotations are hints, which
 * `mcpTools` maps only when told to trust them.
 *
 * An error result (`isError`) throws `McpToolError`. The SDK servers answer a handler that threw with such a result,
 * so it says nothing about the effect unless someone who knows says so: `mcpDedupe`'s refusals (`key_reused` throws
 * `IdempotencyConflictError`, a call still running or a store out of reach a retryable `ToolCallError`,
 * `outcome_unknown` an `OutcomeUnknownError`), its `"dev.idemkey/no-effect"` mark (a handler that threw with
 * `noEffect: true`), or the `noEffect` classifier you declare, which receives the `McpToolError`. Otherwise an
 * `unguarded` call's outcome is unknown: `OutcomeUnknownError`, and the identical call is not sent again until
 * `harness.resolve`; a `keyed` call is released, and a repeat reaches the server with the same key.
 *
 * @example
 * const createIssue = mcpTool(client, { name: "create_issue", effect: "keyed" });
 * const result = await harness.call("conversation-7781", createIssue, { title: "Login fails", repo: "acme/api" });
 * @example
 * // The server's validation errors are answers before any effect: say so, and they free the key.
 * const createUser = mcpTool(client, {
 *   name: "create_user",
 *   effect: "unguarded",
 *   noEffect: (error) => isMcpToolError(error) && error.result.content.some((c) => c.text?.startsWith("Invalid")),
 * });
 */
export function mcpTool<A extends McpArguments = McpArguments>(
  client: McpCallClient,
  options: McpToolOptions<A>,
): Tool<A, McpCallToolResult> {
  if (typeof client !== "object" || client === null || typeof client.callTool !== "function") {
    throw new TypeError("client must be a connected MCP Client (it has no callTool method)");
  }
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  const { name, keyName = name, timeoutMs, ...rest } = options;
  if (typeof name !== "string" || name.length === 0) {
    throw new TypeError(`options.name must be the MCP tool's name, a non-empty string, got ${typeof name}`);
  }
  if (typeof keyName !== "string" || keyName.length === 0) {
    throw new TypeError(`options.keyName must be a non-empty string, got ${typeof keyName}`);
  }
  if (timeoutMs !== undefined) checkNumber("options.timeoutMs", timeoutMs, { exclusive: true });
  const send = callSender(client);
  return defineTool<A, McpCallToolResult>({
    ...rest,
    name: keyName,
    run: (args, ctx) => callOnce(send, name, args, ctx, timeoutMs),
  });
}

async function callOnce(
  send: ReturnType<typeof callSender>,
  name: string,
  args: McpArguments,
  ctx: ToolContext,
  timeoutMs: number | undefined,
): Promise<McpCallToolResult> {
  const params = { name, arguments: args, _meta: { [IDEMPOTENCY_KEY_META]: ctx.idempotencyKey } };
  const result = await send(params, ctx.signal, timeoutMs);
  if (result.isError !== true) return result;
  const refusal = result._meta?.[REFUSAL_META];
  const text = resultText(result);
  switch (refusal) {
    case Refusal.keyReused:
      throw new IdempotencyConflictError({ key: ctx.idempotencyKey, by: "mcp", tool: name, detail: text });
    case Refusal.keyInFlight:
    case Refusal.unavailable:
      throw new ToolCallError(`The MCP tool "${name}" did not run the call yet: ${text}`, {
        noEffect: true,
        retryAfterMs: 1000,
      });
    case Refusal.outcomeUnknown:
      throw new OutcomeUnknownError({ key: ctx.idempotencyKey, by: "mcp", tool: name, detail: text });
    case Refusal.keyInvalid:
    case Refusal.keyMissing:
      throw new ToolCallError(`The MCP tool "${name}" refused the call: ${text}`, {
        noEffect: true,
        retryable: false,
      });
    default:
      // Only the owner's mark vouches for the answer here; the tool's declared classifier is the harness's to ask.
      throw new McpToolError(name, result, { noEffect: result._meta?.[NO_EFFECT_META] === true });
  }
}
