import { isOutcomeUnknownError } from "../errors/guards.js";
import { OutcomeUnknownError } from "../errors/outcome-unknown-error.js";
import type { ModelTexts } from "../harness/model-texts.js";

/** A tool result as Mastra hands it to the model (the AI SDK's `ToolResultOutput`), as far as this file reads it. */
type ModelOutput =
  | { type: "text"; value: string }
  | { type: "json"; value: unknown }
  | { type: "content"; value: unknown[] }
  | { type: string; value?: unknown };

/**
 * What the agent's model reads where a call did not simply run, in the words of the harness's `modelTexts`. Mastra
 * asks a tool's `toModelOutput` with the output alone, so a replayed output is recognised by the object itself (an
 * output the ledger answered is parsed anew for each call); a replayed string output reaches the model as recorded.
 */
export function modelOutput(
  texts: ModelTexts,
  tool: string,
  own: ((output: unknown) => unknown) | undefined,
) {
  const replayed = new WeakMap<object, string>();
  return {
    /** Remembers that `output` was answered from the ledger under `key`. */
    replayed(output: unknown, key: string): void {
      if (typeof output === "object" && output !== null) replayed.set(output, texts.replayed({ tool, key }));
    },
    toModelOutput: async (output: unknown) => {
      const mapped = own ? ((await own(output)) as ModelOutput | undefined) : undefined;
      const text = typeof output === "object" && output !== null ? replayed.get(output) : undefined;
      if (text === undefined) return mapped;
      return prepend(text, mapped ?? { type: "json", value: output });
    },
    /** The error the tool throws: for an unknown outcome, the model's words (Mastra shows it the message). */
    thrown(error: unknown): unknown {
      if (!isOutcomeUnknownError(error)) return error;
      return new OutcomeUnknownError(error.key, texts.outcomeUnknown({ tool, key: error.key }), {
        cause: error,
      });
    },
  };
}

function prepend(text: string, output: ModelOutput): ModelOutput {
  switch (output.type) {
    case "text":
      return { ...output, value: `${text}\n\n${output.value as string}` };
    case "json":
      return { type: "text", value: `${text}\n\n${JSON.stringify(output.value)}` };
    case "content":
      return { ...output, value: [{ type: "text", text }, ...(output.value as unknown[])] };
    default:
      return output;
  }
}
