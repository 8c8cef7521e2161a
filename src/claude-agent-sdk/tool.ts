import type { AnyZodRawShape, InferShape, SdkMcpToolDefinition } from "@anthropic-ai/claude-agent-sdk";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ErrorAnswer } from "../errors/error-answer.js";
import { isErrorAnswer, isOutcomeUnknownError } from "../errors/guards.js";
import { defineTool } from "../harness/define-tool.js";
import { modelTextsOf, outcomeUnknownText } from "../harness/model-texts.js";
import type { NoEffect } from "../harness/retry.js";
import type { Effect, Harness } from "../harness/types.js";
import { replayedResult, textOf, unknownResult } from "./answer.js";
import { attach } from "./context.js";
import { rawShape } from "./raw-shape.js";

/** How a wrapped tool's calls are keyed and repeated. */
export interface IdempotentSdkToolOptions<A> {
  /** How the tool's side effect behaves when repeated; see `Effect`. */
  effect: Effect;
  /**
   * The task every call belongs to: a string when the server is made per session, or a function of the call's
   * arguments (as Claude sent them, before the schema's defaults) and the handler's `extra`. Take it from the Claude Agent SDK session, which `query()` keeps across
   * `resume` (set it yourself with `options.sessionId`, or read `session_id` from the `system` init message), plus the
   * user turn the session is answering when one session serves many turns. Never a value drawn per process or per
   * query call: a resumed session would not recognise the calls it repeats.
   * @example taskId: `${sessionId}:${turnId}`
   */
  taskId: string | ((args: A, extra: unknown) => string);
  /**
   * The natural identity of a call, as `defineTool`'s `identity`. It is given the arguments as Claude sent them:
   * a field the schema fills with a default is missing when Claude left it out.
   * @default all the arguments Claude sent
   */
  identity?: (args: A) => unknown;
  /**
   * Says which failures certainly had no effect, as `defineTool`'s `noEffect`: matters for an `unguarded` tool,
   * whose other failures leave the call's outcome unknown and its key locked. An error result (`isError: true`)
   * arrives as an `ErrorAnswer` whose `answer` is the result; when this says `true`, Claude gets the result
   * unchanged and the same call may run again later.
   * @default none: only an error that says `noEffect: true` itself had no effect
   * @example noEffect: (error) => isErrorAnswer(error) && JSON.stringify(error.answer).includes("insufficient funds")
   */
  noEffect?: NoEffect;
}

/**
 * A tool made with the Claude Agent SDK's `tool()`, whose handler runs through `harness.callWithOutcome`: the same
 * name, description, input schema and annotations, so Claude sees the same tool when `createSdkMcpServer({ tools })`
 * serves it, and each call keyed by the task id, the tool's name and the arguments Claude sent (before the schema's
 * defaults, which the handler still gets). A call Claude makes again after a resumed session, a retried turn or a
 * crash takes effect once and gets the recorded result after the harness's `modelTexts.replayed` text. An error
 * result (`isError: true`) follows the one rule of docs/integration-contract.md: handed back unchanged when the
 * call had no effect (a `keyed` tool, or `noEffect` says so), otherwise the outcome is unknown and Claude reads
 * `modelTexts.outcomeUnknown` in an error result. The handler reads its key with `idemkeyContext(extra)`.
 *
 * @example
 * const server = createSdkMcpServer({ name: "billing", tools: [idempotentSdkTool(harness, refund, { effect: "keyed", taskId: sessionId })] });
 */
export function idempotentSdkTool<Schema extends AnyZodRawShape>(
  harness: Harness,
  definition: SdkMcpToolDefinition<Schema>,
  options: IdempotentSdkToolOptions<InferShape<Schema>>,
): SdkMcpToolDefinition<Schema> {
  if (typeof harness !== "object" || harness === null || typeof harness.call !== "function") {
    throw new TypeError("harness must be a harness made by createHarness()");
  }
  if (typeof definition !== "object" || definition === null || typeof definition.handler !== "function") {
    throw new TypeError("definition must be a tool made by tool() from @anthropic-ai/claude-agent-sdk");
  }
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const { effect, identity, taskId, noEffect } = options;
  const taskIdOf = resolveTaskId(taskId);
  const handler = definition.handler as (args: unknown, extra: unknown) => Promise<CallToolResult>;
  const raw = rawShape(definition.inputSchema as { [name: string]: unknown });
  const texts = modelTextsOf(harness);
  // Validates effect, identity and noEffect now, once.
  const base = defineTool<unknown, unknown>({
    name: definition.name,
    effect,
    identity: identity as ((args: unknown) => unknown) | undefined,
    noEffect,
    run: () => null,
  });

  return {
    ...definition,
    inputSchema: raw.shape,
    handler: async (args: unknown, extra: unknown): Promise<CallToolResult> => {
      const signal = (extra as { signal?: unknown } | undefined)?.signal;
      const call = defineTool<unknown, CallToolResult>({
        name: base.name,
        effect: base.effect,
        identity: base.identity,
        noEffect: base.noEffect,
        run: async (input, ctx) => {
          const own =
            typeof extra === "object" && extra !== null
              ? { ...extra, signal: ctx.signal }
              : { signal: ctx.signal };
          const result = await handler(await raw.withDefaults(input), attach(own, ctx));
          if (result?.isError === true) {
            throw new ErrorAnswer(result, { tool: base.name, text: textOf(result) });
          }
          return result;
        },
      });
      const id = taskIdOf(args, extra);
      try {
        const { value, replayed } = await harness.callWithOutcome(
          id,
          call,
          args,
          signal instanceof AbortSignal ? { signal } : undefined,
        );
        if (!replayed) return value;
        return replayedResult(value, texts.replayed({ tool: base.name, key: harness.key(id, call, args) }));
      } catch (error) {
        if (isErrorAnswer(error)) return error.answer as CallToolResult;
        if (isOutcomeUnknownError(error)) {
          return unknownResult(outcomeUnknownText(texts, base.name, error));
        }
        throw error;
      }
    },
  } as SdkMcpToolDefinition<Schema>;
}

function resolveTaskId<A>(taskId: unknown): (args: A, extra: unknown) => string {
  if (typeof taskId === "string") {
    if (taskId.length === 0) throw new TypeError("options.taskId must be a non-empty string or a function");
    return () => taskId;
  }
  if (typeof taskId !== "function") {
    throw new TypeError(`options.taskId must be a non-empty string or a function, got ${typeof taskId}`);
  }
  return (args, extra) => {
    const id = taskId(args, extra);
    if (typeof id !== "string" || id.length === 0) {
      throw new TypeError(
        `options.taskId must return a non-empty string, got ${id === "" ? "an empty string" : typeof id}`,
      );
    }
    return id;
  };
}
