import type { ToolMessage as Message, ToolCall } from "@langchain/core/messages";
import { importPeer } from "../peer/import-peer.js";

/**
 * LangChain's `ToolMessage` and the two messages idemkey writes with it, loaded for `subpath` (`idemkey/langgraph` or
 * `idemkey/langchain`), so that a missing `@langchain/core` is reported for the subpath the application imported.
 */
export async function toolMessages(subpath: string) {
  const { ToolMessage } = await importPeer(
    subpath,
    "@langchain/core",
    () => import("@langchain/core/messages"),
  );
  return {
    ToolMessage,
    /**
     * A message answered from the ledger as the model reads it: the replayed text before the content (a paragraph of
     * a string content, a text block of an array content), the artifact, status and ids as they were, for the code
     * that reads them.
     */
    withReplayedText(message: Message, text: string): Message {
      const { content } = message;
      return new ToolMessage({
        content: typeof content === "string" ? `${text}\n\n${content}` : [{ type: "text", text }, ...content],
        tool_call_id: message.tool_call_id,
        name: message.name,
        artifact: message.artifact,
        status: message.status,
        id: message.id,
        metadata: message.metadata,
        additional_kwargs: message.additional_kwargs,
        response_metadata: message.response_metadata,
      } as ConstructorParameters<typeof ToolMessage>[0]);
    },
    /** What the model reads instead of an answer when the call's outcome is unknown: an error message with the text. */
    unknownMessage(text: string, toolCall: Pick<ToolCall, "id" | "name">): Message {
      return new ToolMessage({
        content: text,
        tool_call_id: toolCall.id ?? "",
        name: toolCall.name,
        status: "error",
      });
    },
  };
}

/** The words of a message, for `ErrorAnswer`'s message. */
export function textOf(message: Message): string {
  const { content } = message;
  if (typeof content === "string") return content;
  const words = content.flatMap((block) =>
    block.type === "text" && "text" in block ? [String(block.text)] : [],
  );
  return words.length === 0 ? "(no text)" : words.join(" ");
}
