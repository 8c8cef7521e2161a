import type {
  FunctionTool,
  RunContext,
  ToolExecuteArgument,
  ToolInputParameters,
  ToolOptions,
  ToolOutputSchema,
  UnknownContext,
} from "@openai/agents";
import { isOutcomeUnknownError } from "../errors/guards.js";
import { defineTool } from "../harness/define-tool.js";
import { modelTextsOf, outcomeUnknownText } from "../harness/model-texts.js";
import type { NoEffect } from "../harness/retry.js";
import type { Effect, Harness } from "../harness/types.js";
import { importPeer } from "../peer/import-peer.js";
import { attach } from "./context.js";

const { tool } = await importPeer("idemkey/openai-agents", "@openai/agents", () => import("@openai/agents"));

type Details = Parameters<FunctionTool["invoke"]>[2];

/**
 * What `idempotentTool` takes besides the SDK's own `tool()` options. Named with its framework, since LangGraph's
 * `idempotentTool` takes other options.
 */
export interface OpenAIIdempotentToolOptions<TParameters extends ToolInputParameters, Context> {
  /** How the tool's side effect behaves when repeated; see `Effect`. */
  effect: Effect;
  /**
   * The task every call belongs to, from the run context the application passed to `run(agent, input, { context })`:
   * part of every key, so it decides which calls count as the same call. The context is saved with the `RunState`,
   * so a run resumed after an approval or a crash finds the same task id. Take it from what a replay repeats and a
   * new request does not: a ticket or job id, the id of the user message being answered, a webhook delivery id.
   * Never the tool call id, which the model draws anew whenever a turn is re-sampled.
   * @example taskId: (runContext) => runContext.context.ticketId
   */
  taskId: (runContext: RunContext<Context>) => string;
  /**
   * The natural identity of a call, as `defineTool`'s `identity`: the key is derived from what it returns instead of
   * from all the input, so a call the model re-words is still the same call.
   * @default all the (parsed) input
   */
  identity?: (input: ToolExecuteArgument<TParameters>) => unknown;
  /** Which failures certainly had no effect: see `ToolDefinition.noEffect`. @default none */
  noEffect?: NoEffect;
}

/**
 * @deprecated Named `OpenAIIdempotentToolOptions` now: `IdempotencyOptions` is the HTTP middleware's, and
 * `IdempotentToolOptions` LangGraph's `idempotentTool`'s.
 */
export type IdempotencyOptions<
  TParameters extends ToolInputParameters,
  Context,
> = OpenAIIdempotentToolOptions<TParameters, Context>;

/**
 * The SDK's `tool()`, with `execute` run through `harness.call` under a key derived from the task id, the tool's
 * name and its input as the model sent it (the call's JSON arguments, before the SDK's parse fills in defaults, which
 * a generated one would make new on every replay; the parsed input where the SDK passes no tool call): a call
 * repeated by a resumed `RunState`, a re-run turn or a replayed run takes effect once, and the repeat gets the
 * recorded output. Everything else (name, description, parameters, `needsApproval`,
 * `errorFunction`) is the SDK's, unchanged, so the model sees the same tool. `execute` reads its key with
 * `idemkeyContext(details)` and must return JSON (a string, say), which the ledger records.
 *
 * The model reads the harness's `modelTexts`: a call answered from the ledger gets the `replayed` text before its
 * output, which then reaches the run as that text (a string, or other JSON as its JSON text, as the SDK shows it to
 * the model; structured outputs and tools with an `outputSchema` are returned as recorded), and a call whose outcome is unknown answers the `outcomeUnknown`
 * text through the tool's error function (the application's own `errorFunction` answers every other error).
 *
 * Wrapping `execute` rather than a finished `FunctionTool` is deliberate: the SDK turns a thrown error into text for
 * the model inside the tool, so a wrapper around it would record a transient failure as the call's output.
 *
 * @example
 * const refund = idempotentTool(harness, {
 *   name: "refund",
 *   description: "Refund a payment.",
 *   parameters: z.object({ paymentId: z.string(), cents: z.number() }),
 *   needsApproval: true,
 *   effect: "keyed",
 *   taskId: (runContext) => runContext.context.ticketId,
 *   execute: async (input, runContext, details) => payments.refund(input, idemkeyContext(details)?.idempotencyKey),
 * });
 */
export function idempotentTool<
  TParameters extends ToolInputParameters = undefined,
  Context = UnknownContext,
  Result = string,
  TOutputSchema extends ToolOutputSchema | undefined = undefined,
>(
  harness: Harness,
  options: ToolOptions<TParameters, Context, TOutputSchema> &
    OpenAIIdempotentToolOptions<TParameters, Context>,
): ReturnType<typeof tool<TParameters, Context, Result, TOutputSchema>> {
  if (typeof harness !== "object" || harness === null || typeof harness.call !== "function") {
    throw new TypeError("harness must be a harness made by createHarness()");
  }
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const { effect, taskId, identity, noEffect, execute, errorFunction, ...rest } = options;
  if (typeof taskId !== "function") {
    throw new TypeError(`options.taskId must be a function of the run context, got ${typeof taskId}`);
  }
  if (typeof execute !== "function") throw new TypeError("options.execute must be a function");
  const name = typeof rest.name === "string" && rest.name.length > 0 ? rest.name : execute.name;
  // Validates effect and identity now, once, with the SDK's own rules for the name still to come.
  defineTool({
    name: name || "tool",
    effect,
    identity: identity as ((args: unknown) => unknown) | undefined,
    noEffect,
    run: () => null,
  });
  if (errorFunction !== undefined && errorFunction !== null && typeof errorFunction !== "function") {
    throw new TypeError("options.errorFunction must be a function or null");
  }
  const texts = modelTextsOf(harness);
  // The application's own function (or the SDK's default words) answers every error but an unknown outcome.
  const answerError =
    errorFunction === null
      ? null
      : (runContext: RunContext<Context>, error: unknown, details?: Details) =>
          isOutcomeUnknownError(error)
            ? outcomeUnknownText(texts, made.name, error)
            : errorFunction
              ? errorFunction(runContext, error, details)
              : "An error occurred while running the tool. Please try again.";

  type Input = ToolExecuteArgument<TParameters>;
  const made = tool<TParameters, Context, Result, TOutputSchema>({
    ...rest,
    // With an output schema and no errorFunction the SDK throws errors into the run: kept so.
    ...(errorFunction === undefined && rest.outputSchema !== undefined ? {} : { errorFunction: answerError }),
    execute: async (input: Input, runContext?: RunContext<Context>, details?: Details) => {
      if (runContext === undefined) {
        throw new TypeError(`The tool "${made.name}" needs the run context to know its task id`);
      }
      const id = taskId(runContext);
      if (typeof id !== "string" || id.length === 0) {
        throw new TypeError(
          `options.taskId must return a non-empty string, got ${id === "" ? "an empty string" : typeof id}`,
        );
      }
      const sent = sentArguments(details);
      const call = defineTool<Input, unknown>({
        // The SDK's name, as the model sees it: the key must not change when the name is normalised.
        name: made.name,
        effect,
        // Without a declared identity, the key is what the model sent.
        identity: identity ?? (sent === undefined ? undefined : () => sent.value),
        noEffect,
        run: (args, ctx) => execute(args, runContext, attach({ ...details, signal: ctx.signal }, ctx)),
      });
      const signal = details?.signal;
      const done = await harness.callWithOutcome(id, call, input, signal ? { signal } : undefined);
      const shown = modelText(done.value);
      if (!done.replayed || shown === undefined || rest.outputSchema !== undefined) return done.value;
      const text = texts.replayed({ tool: made.name, key: harness.key(id, call, input) });
      return `${text}\n\n${shown}`;
    },
  } as ToolOptions<TParameters, Context, TOutputSchema>);
  return made;
}

/**
 * The text the SDK shows the model for an output without an output schema: a string as it is, other JSON as its
 * JSON text. `undefined` for the SDK's structured outputs (`{ type: "text" | "image" | ... }`), which it turns into
 * content items of their own and which a text in front would break.
 */
function modelText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null || "type" in value) return undefined;
  return JSON.stringify(value);
}

/** The arguments of the model's tool call, parsed from its JSON text; `undefined` where the SDK passed no call. */
function sentArguments(details: Details | undefined): { value: unknown } | undefined {
  const text = details?.toolCall?.arguments;
  // An empty text is the SDK's redaction of the arguments, not what the model sent.
  if (typeof text !== "string" || text.length === 0) return undefined;
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}
