import { isOutcomeUnknownError } from "../errors/guards.js";
import { OutcomeUnknownError } from "../errors/outcome-unknown-error.js";
import { type ModelOutput, type ModelTexts, outcomeUnknownText, withText } from "../harness/model-texts.js";

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
      return withText(text, mapped ?? { type: "json", value: output });
    },
    /** The error the tool throws: for an unknown outcome, the model's words (Mastra shows it the message). */
    thrown(error: unknown): unknown {
      if (!isOutcomeUnknownError(error)) return error;
      return new OutcomeUnknownError(error.key, outcomeUnknownText(texts, tool, error), {
        cause: error,
      });
    },
  };
}
