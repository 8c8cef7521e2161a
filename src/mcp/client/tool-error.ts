import { brand, branded } from "../../errors/brand.js";
import { ErrorAnswer } from "../../errors/error-answer.js";
import type { McpCallToolResult } from "../types.js";

export interface McpToolErrorOptions extends ErrorOptions {
  /** The server said the call had no effect (`_meta["dev.idemkey/no-effect"]: true`). @default undefined */
  noEffect?: boolean;
}

/**
 * An MCP server answered a tool call with an error result (`isError: true`), which is not one of `mcpDedupe`'s
 * refusals. Both SDK lines turn a handler that throws into such a result, so it cannot tell "refused, nothing
 * happened" from "sent the email, then crashed": it says nothing about the effect (`noEffect` is `undefined`) unless
 * the server marked it `_meta["dev.idemkey/no-effect"]: true` (then `noEffect` is `true`). The harness then applies
 * the one rule (docs/integration-contract.md): the tool's declared `noEffect` classifier, which receives this error
 * (`answer` and `result` are the result), may vouch for it; otherwise an `unguarded` call's outcome is unknown
 * (`OutcomeUnknownError`, whose `cause` is this error, and the key stays locked) and a `keyed` call is released (the
 * server dedupes a repeat on the key). Not retried within one `harness.call`: the model reads the message.
 */
export class McpToolError extends ErrorAnswer<McpCallToolResult> {
  override name = "McpToolError";
  /** The error result, as the server sent it: the same object as `answer`. */
  readonly result: McpCallToolResult;

  constructor(tool: string, result: McpCallToolResult, options: McpToolErrorOptions = {}) {
    const { noEffect, ...rest } = options;
    super(result, { ...rest, tool, text: resultText(result), ...(noEffect === true ? { noEffect } : {}) });
    this.result = result;
  }
}
brand(McpToolError, "McpToolError");

/** Whether `error` is an `McpToolError`, from this copy of idemkey or another, in any realm. */
export function isMcpToolError(error: unknown): error is McpToolError {
  return branded(error, "McpToolError");
}

/** The text parts of a tool result, joined and bounded, for an error message. */
export function resultText(result: McpCallToolResult): string {
  const content = Array.isArray(result.content) ? result.content : [];
  const text = content
    .map((part) => (part.type === "text" ? String(part.text ?? "") : `[${part.type}]`))
    .join("\n")
    .trim();
  if (text === "") return "(no text)";
  return text.length > 1000 ? `${text.slice(0, 997)}...` : text;
}
