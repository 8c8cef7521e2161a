import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

/**
 * A recorded result as Claude reads it when it was answered from the ledger: the replayed text first, as a text
 * part of its own, and the tool's content after it unchanged, with `structuredContent` and `_meta` left as they are
 * for the code that reads them.
 */
export function replayedResult(result: CallToolResult, text: string): CallToolResult {
  const content = Array.isArray(result?.content) ? result.content : [];
  return { ...result, content: [{ type: "text", text }, ...content] };
}

/** What Claude reads instead of a result when the call's outcome is unknown: an error result with the text. */
export function unknownResult(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/** The words of an error result, for `ErrorAnswer`'s message. */
export function textOf(result: CallToolResult): string {
  const content = Array.isArray(result?.content) ? result.content : [];
  const words = content.flatMap((part) => (part.type === "text" ? [part.text] : []));
  return words.length === 0 ? "(no text)" : words.join(" ");
}
