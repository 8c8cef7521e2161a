import { IdemkeyError } from "../../errors/idemkey-error.js";
import type { McpCallToolResult } from "../types.js";

/**
 * An MCP server answered a tool call with an error result (`isError: true`): a write outside the allowed root, a
 * missing entity, invalid arguments, an unknown tool. That is the server's answer, not a lost one, so the harness
 * takes it as a failure without effect (`noEffect`) for every effect, `unguarded` included: the result is not
 * recorded, the key is freed, and a later call with the same key reaches the server again. The message carries the
 * result's text for the model. Not retried within one `harness.call`: the model, which reads the message, decides
 * what to do next. Only a lost or timed-out answer leaves an `unguarded` call's outcome unknown.
 */
export class McpToolError extends IdemkeyError {
  override name = "McpToolError" as const;
  /** The MCP tool's name. */
  readonly tool: string;
  /** The error result, as the server sent it. */
  readonly result: McpCallToolResult;
  readonly retryable = false;
  /** The server answered: what the harness reads to free the key instead of recording an unknown outcome. */
  readonly noEffect = true;

  constructor(tool: string, result: McpCallToolResult, options?: ErrorOptions) {
    super(`The MCP tool "${tool}" returned an error: ${resultText(result)}`, options);
    this.tool = tool;
    this.result = result;
  }
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
