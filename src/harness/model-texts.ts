import type { OutcomeUnknownError, OutcomeUnknownReason } from "../errors/outcome-unknown-error.js";

/** What a model text is written from: the call it is about. */
export interface ModelTextContext {
  /** The tool's name. */
  readonly tool: string;
  /** The call's idempotency key: what a person resolves an unknown outcome by. */
  readonly key: string;
}

/**
 * What the unknown-outcome text is written from: the call, why its outcome is unknown and the tool's own answer, as
 * `OutcomeUnknownError` carries them. `reason` left out reads as `interrupted` (a caller's own context of old).
 */
export interface OutcomeUnknownContext extends ModelTextContext {
  readonly reason?: OutcomeUnknownReason;
  /** The tool's (or the owner's) own words, when an answer is why the outcome is unknown. */
  readonly answer?: string | undefined;
}

/**
 * The words the model reads where a call did not simply run: adapters put them where their framework shows the model
 * a tool's answer. They are there to stop the model from re-planning the same effect with reworded arguments, which
 * makes a new key and the one duplicate no key can catch.
 */
export interface ModelTexts {
  /** Put before a result answered from the ledger (a replay, or the same call finished while this one waited). */
  replayed(context: ModelTextContext): string;
  /**
   * What the model reads instead of a result when the call's outcome is unknown (`OutcomeUnknownError`): why it is on
   * hold, truthfully, and the tool's own answer when there was one, so that the model never loses what the tool said.
   */
  outcomeUnknown(context: OutcomeUnknownContext): string;
}

/** Why a call is on hold, in words true of the first call and of every later one that finds the key on hold. */
const BECAUSE: { [reason in OutcomeUnknownReason]: string } = {
  interrupted: "an earlier attempt was interrupted before its outcome was known",
  unclassified_error:
    "the tool answered it with an error, and nothing says that this error means it was not done, so it may have " +
    "been done before the error",
  unrecordable_result: "it ran, but its result could not be recorded",
  owner_unknown: "the service that performs it cannot tell whether an earlier attempt took effect",
  expired:
    "the same action was running elsewhere, and its record expired before this call could read its outcome",
};

export const defaultModelTexts: ModelTexts = Object.freeze({
  replayed: ({ tool }: ModelTextContext) =>
    `This "${tool}" action was already done earlier in this task; its recorded result follows and nothing was ` +
    "done again. Do not repeat it, even with other wording.",
  outcomeUnknown: ({ tool, key, reason, answer }: OutcomeUnknownContext) =>
    `The "${tool}" action may or may not have taken effect: ${BECAUSE[reason ?? "interrupted"] ?? BECAUSE.interrupted}. ` +
    "Do not retry it, and do not try the same action with other arguments. It stays on hold until its outcome is " +
    `checked (by the tool's reconcile, or by a person resolving key ${key}).` +
    (answer === undefined || answer === "" ? "" : `\n\nThe tool's answer was:\n${answer}`),
});

/**
 * The one way an adapter words an unknown outcome for the model: `texts.outcomeUnknown` given the error's reason and
 * the tool's own answer, so that every framework tells the model the same true thing.
 */
export function outcomeUnknownText(texts: ModelTexts, tool: string, error: OutcomeUnknownError): string {
  return texts.outcomeUnknown({
    tool,
    key: error.key,
    reason: error.reason,
    ...(error.answer === undefined ? {} : { answer: error.answer }),
  });
}

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
