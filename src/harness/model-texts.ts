/** What a model text is written from: the call it is about. */
export interface ModelTextContext {
  /** The tool's name. */
  readonly tool: string;
  /** The call's idempotency key: what a person resolves an unknown outcome by. */
  readonly key: string;
}

/**
 * The words the model reads where a call did not simply run: adapters put them where their framework shows the model
 * a tool's answer. They are there to stop the model from re-planning the same effect with reworded arguments, which
 * makes a new key and the one duplicate no key can catch.
 */
export interface ModelTexts {
  /** Put before a result answered from the ledger (a replay, or the same call finished while this one waited). */
  replayed(context: ModelTextContext): string;
  /** What the model reads instead of a result when the call's outcome is unknown (`OutcomeUnknownError`). */
  outcomeUnknown(context: ModelTextContext): string;
}

export const defaultModelTexts: ModelTexts = Object.freeze({
  replayed: ({ tool }: ModelTextContext) =>
    `This "${tool}" action was already done earlier in this task; its recorded result follows and nothing was ` +
    "done again. Do not repeat it, even with other wording.",
  outcomeUnknown: ({ tool, key }: ModelTextContext) =>
    `The "${tool}" action may or may not have taken effect: an earlier attempt was interrupted before its outcome ` +
    "was known. Do not retry it, and do not try the same action with other arguments. It stays on hold until its " +
    `outcome is checked (by the tool's reconcile, or by a person resolving key ${key}).`,
});

/** `HarnessOptions.modelTexts` resolved: each text the caller's, or the default. */
export function resolveModelTexts(texts: Partial<ModelTexts> | undefined): ModelTexts {
  if (texts === undefined) return defaultModelTexts;
  if (typeof texts !== "object" || texts === null) {
    throw new TypeError(
      `options.modelTexts must be an object, got ${texts === null ? "null" : typeof texts}`,
    );
  }
  const resolved = { ...defaultModelTexts };
  for (const name of ["replayed", "outcomeUnknown"] as const) {
    const text = texts[name];
    if (text === undefined) continue;
    if (typeof text !== "function") {
      throw new TypeError(
        `options.modelTexts.${name} must be a function of { tool, key }, got ${typeof text}`,
      );
    }
    resolved[name] = text;
  }
  return Object.freeze(resolved);
}

/** The texts of a harness, or the defaults for an object that only looks like one (a test's fake). */
export function modelTextsOf(harness: { modelTexts?: ModelTexts }): ModelTexts {
  return harness.modelTexts ?? defaultModelTexts;
}

/**
 * A tool result as the model reads it in the AI SDK's shape (`ToolResultOutput`), which Mastra shares: the kinds a
 * text can be put before. Others pass through.
 */
export type ModelOutput =
  | { type: "text"; value: string }
  | { type: "json"; value: unknown }
  | { type: "content"; value: unknown[] }
  | { type: string; value?: unknown };

/** `output` with `text` before it: a paragraph of a text, a JSON value as its text, a first text part of content. */
export function withText<O extends ModelOutput>(
  text: string,
  output: O,
): O | { type: "text"; value: string } {
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
