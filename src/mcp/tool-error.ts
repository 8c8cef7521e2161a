import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { IdemkeyError } from "../errors/idemkey-error.js";

/**
 * An MCP server answered a tool call with an error result (`isError: true`). The result is not recorded in the
 * ledger, so a later call with the same key runs again; the message carries the result's text for the model.
 * Not retried within one `harness.call`: the model, which reads the message, decides what to do next. For an
 * `unguarded` tool the harness cannot know whether the failed call took effect, so its outcome becomes unknown.
 */
export class McpToolError extends IdemkeyError {
  override name = "McpToolError" as const;
  /** The MCP tool's name. */
  readonly tool: string;
  /** The error result, as the server sent it. */
  readonly result: CallToolResult;
  readonly retryable = false;

  constructor(tool: string, result: CallToolResult, options?: ErrorOptions) {
    super(`The MCP tool "${tool}" returned an error: ${resultText(result)}`, options);
    this.tool = tool;
    this.result = result;
  }
}

/** The text parts of a tool result, joined and bounded, for an error message. */
export function resultText(result: CallToolResult): string {
  const content = Array.isArray(result.content) ? result.content : [];
  const text = content
    .map((part) => (part.type === "text" ? part.text : `[${part.type}]`))
    .join("\n")
    .trim();
  if (text === "") return "(no text)";
  return text.length > 1000 ? `${text.slice(0, 997)}...` : text;
}
