import type { InferToolInput, ToolExecutionOptions, ToolSet } from "ai";
import { isOutcomeUnknownError } from "../errors/guards.js";
import { OutcomeUnknownError } from "../errors/outcome-unknown-error.js";
import { ToolCallError } from "../errors/tool-call-error.js";
import { defineTool } from "../harness/define-tool.js";
import { modelTextsOf, outcomeUnknownText } from "../harness/model-texts.js";
import { Effect, type Harness, type Tool, type ToolPolicy } from "../harness/types.js";
import { describe } from "../options/describe.js";
import { importPeer } from "../peer/import-peer.js";
import { attach } from "./context.js";
import { replayNotes } from "./model-output.js";
import { rawInputs } from "./raw-input.js";

const { asSchema, jsonSchema } = await importPeer("idemkey/ai", "ai", () => import("ai"));

// One ToolPolicy for every adapter that takes policies by tool name (the AI SDK's, LangChain's): one idea, one type.
export type { ToolPolicy };

export interface IdempotentToolsOptions<T extends ToolSet> {
  /**
   * The task every call belongs to: part of every key, so it decides which calls count as the same call. A string
   * when the tools are wrapped per request, or a function of each call's execution options, typically reading the
   * `experimental_context` given to `generateText` / `streamText`. Take it from what a replay repeats and a new
   * request does not: the id of the user message being answered, a job id, a webhook delivery id. Never the tool
   * call id, which the provider draws anew whenever a step is re-sampled.
   * @example taskId: (options) => (options.experimental_context as { turnId: string }).turnId
   */
  taskId: string | ((options: ToolExecutionOptions) => string);
  /**
   * The effect (or the effect and identity) of every tool that has an `execute`, by name. A tool with an `execute`
   * and no entry is a `TypeError`, so that none runs unguarded by mistake; tools without `execute` are passed
   * through untouched.
   * A policy's `noEffect` is the tool's declared classifier (see `ToolDefinition.noEffect`).
   * @example effects: { sendEmail: "keyed", searchDocs: "read", createTicket: { effect: "keyed", identity: (i) => i.subject } }
   */
  effects: { [K in keyof T]?: Effect | ToolPolicy<InferToolInput<T[K]>> };
}

/**
 * Wraps the tools passed to `generateText` / `streamText` so that each `execute` runs through `harness.call` under
 * a key derived from the task id, the tool's name and its input as the model sent it (before the schema fills in
 * defaults, which a generated one would make new on every replay): the same call repeated by the model, by a retried
 * step or by a whole run replayed after a crash takes effect once, and the repeat gets the recorded output.
 * Everything the model sees (description, input schema, provider options) is the tool's own, unchanged; the key is
 * never part of the input. A wrapped `execute` reads its key with `idemkeyContext(options)`, and gets its input as
 * the schema makes it. The model reads the harness's `modelTexts`: before the output of a call answered from the
 * ledger (through `toModelOutput`, after the tool's own; the output the application reads is the recorded one), and
 * as the error text of a call whose outcome is unknown (an `OutcomeUnknownError` whose `cause` is the harness's).
 *
 * An `execute` must return JSON, which the ledger records; streaming tools (an `execute` returning an
 * `AsyncIterable`) are refused.
 *
 * @example
 * const result = await generateText({
 *   model,
 *   tools: idempotentTools(harness, { sendEmail, searchDocs }, {
 *     taskId: `${chatId}:${userMessageId}`,
 *     effects: { sendEmail: "keyed", searchDocs: "read" },
 *   }),
 *   messages,
 * });
 */
export function idempotentTools<T extends ToolSet>(
  harness: Harness,
  tools: T,
  options: IdempotentToolsOptions<T>,
): T {
  if (typeof harness !== "object" || harness === null || typeof harness.call !== "function") {
    throw new TypeError("harness must be a harness made by createHarness()");
  }
  if (typeof tools !== "object" || tools === null) throw new TypeError("tools must be an object of tools");
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const taskIdOf = resolveTaskId(options.taskId);
  const effects = (options.effects ?? {}) as { [name: string]: Effect | ToolPolicy<unknown> | undefined };
  if (typeof effects !== "object") throw new TypeError("options.effects must be an object");
  for (const name of Object.keys(effects)) {
    if (!Object.hasOwn(tools, name)) throw new TypeError(`options.effects.${name} names no tool in tools`);
  }

  const texts = modelTextsOf(harness);
  const wrapped: { [name: string]: unknown } = {};
  for (const [name, tool] of Object.entries(tools as ToolSet)) {
    const execute = tool.execute as ((input: unknown, options: ToolExecutionOptions) => unknown) | undefined;
    if (typeof execute !== "function") {
      wrapped[name] = tool;
      continue;
    }
    const policy = resolvePolicy(name, effects[name]);
    // Validates the policy now, once, rather than on the first call.
    defineTool({ name, ...policy, run: () => null });
    const sent = rawInputs(asSchema as never, jsonSchema as never);
    const notes = replayNotes(tool.toModelOutput as Parameters<typeof replayNotes>[0]);
    wrapped[name] = {
      ...tool,
      inputSchema: sent.wrap(tool.inputSchema as never),
      toModelOutput: notes.toModelOutput,
      execute: async (input: unknown, executionOptions: ToolExecutionOptions) => {
        const raw = sent.of(input);
        const call: Tool<unknown, unknown> = defineTool({
          name,
          ...policy,
          // Without a declared identity, the key is what the model sent.
          identity: policy.identity ?? (() => raw),
          run: (args, ctx) => {
            const output = execute(args, attach({ ...executionOptions, abortSignal: ctx.signal }, ctx));
            if (isAsyncIterable(output)) {
              throw new ToolCallError(
                `The tool "${name}" streams its output (execute returned an AsyncIterable), which idemkey cannot ` +
                  "record: return the final output instead",
                { noEffect: true, retryable: false },
              );
            }
            return output;
          },
        });
        const signal = executionOptions.abortSignal;
        const taskId = taskIdOf(executionOptions);
        try {
          const done = await harness.callWithOutcome(taskId, call, input, signal ? { signal } : undefined);
          if (done.replayed) {
            const key = harness.key(taskId, call, input);
            notes.note(executionOptions.toolCallId, texts.replayed({ tool: name, key }));
          }
          return done.value;
        } catch (error) {
          if (!isOutcomeUnknownError(error)) throw error;
          // The SDK shows the model an error's message: the model's words, the harness's error as the cause.
          throw new OutcomeUnknownError(error.key, outcomeUnknownText(texts, name, error), {
            cause: error,
          });
        }
      },
    };
  }
  return wrapped as T;
}

function resolveTaskId(taskId: unknown): (options: ToolExecutionOptions) => string {
  if (typeof taskId === "string") {
    if (taskId.length === 0) throw new TypeError("options.taskId must be a non-empty string or a function");
    return () => taskId;
  }
  if (typeof taskId !== "function") {
    throw new TypeError(`options.taskId must be a non-empty string or a function, got ${typeof taskId}`);
  }
  return (options) => {
    const id = taskId(options);
    if (typeof id !== "string" || id.length === 0) {
      throw new TypeError(`options.taskId must return a non-empty string, got ${describe(id)}`);
    }
    return id;
  };
}

function resolvePolicy(name: string, entry: Effect | ToolPolicy<unknown> | undefined): ToolPolicy<unknown> {
  if (entry === undefined) {
    throw new TypeError(
      `options.effects.${name} is missing: say how the tool "${name}" behaves when repeated ` +
        '("read", "idempotent", "keyed" or "unguarded")',
    );
  }
  if (typeof entry === "string") {
    if (!EFFECTS.includes(entry)) {
      throw new TypeError(
        `options.effects.${name} must be one of ${EFFECTS.join(", ")}, got ${describe(entry)}`,
      );
    }
    return { effect: entry };
  }
  if (typeof entry !== "object" || entry === null) {
    throw new TypeError(
      `options.effects.${name} must be an effect or { effect, identity, noEffect }, got ${describe(entry)}`,
    );
  }
  const { effect, identity, noEffect } = entry;
  if (!EFFECTS.includes(effect)) {
    throw new TypeError(
      `options.effects.${name}.effect must be one of ${EFFECTS.join(", ")}, got ${describe(effect)}`,
    );
  }
  if (identity !== undefined && typeof identity !== "function") {
    throw new TypeError(`options.effects.${name}.identity must be a function, got ${describe(identity)}`);
  }
  if (noEffect !== undefined && typeof noEffect !== "function") {
    throw new TypeError(`options.effects.${name}.noEffect must be a function, got ${describe(noEffect)}`);
  }
  return {
    effect,
    ...(identity === undefined ? {} : { identity }),
    ...(noEffect === undefined ? {} : { noEffect }),
  };
}

const EFFECTS: readonly string[] = Object.values(Effect);

function isAsyncIterable(value: unknown): boolean {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}
