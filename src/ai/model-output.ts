import type { Tool } from "ai";
import { withText } from "../harness/model-texts.js";

type ToolResultOutput = Awaited<ReturnType<NonNullable<Tool["toModelOutput"]>>>;

type ToModelOutput = (options: {
  toolCallId: string;
  input: unknown;
  output: unknown;
}) => ToolResultOutput | PromiseLike<ToolResultOutput>;

/** At most this many replayed calls wait for the SDK to turn their output into the model's input. */
const PENDING = 1_000;

/**
 * What the model reads of a replayed call: the harness's `replayed` text before the output, put where the AI SDK
 * turns a tool's output into the model's input (`toModelOutput`), so that the output `execute` returns, which the
 * application reads, stays the recorded one.
 */
export function replayNotes(own: ToModelOutput | undefined) {
  const notes = new Map<string, string>();
  return {
    /** Remembers that the call `toolCallId` was answered from the ledger, and the text the model reads for it. */
    note(toolCallId: string, text: string): void {
      if (notes.size >= PENDING) notes.delete(notes.keys().next().value as string);
      notes.set(toolCallId, text);
    },
    toModelOutput: async (options: { toolCallId: string; input: unknown; output: unknown }) => {
      // Kept, not taken: the SDK turns one result into the model's input more than once (each step's messages).
      const text = notes.get(options.toolCallId);
      const output: ToolResultOutput = own
        ? await own(options)
        : typeof options.output === "string"
          ? { type: "text", value: options.output }
          : { type: "json", value: (options.output ?? null) as never };
      return text === undefined ? output : (withText(text, output) as ToolResultOutput);
    },
  };
}
