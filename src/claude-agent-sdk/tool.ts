import type { AnyZodRawShape, InferShape, SdkMcpToolDefinition } from "@anthropic-ai/claude-agent-sdk";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ToolCallError } from "../errors/tool-call-error.js";
import { defineTool } from "../harness/define-tool.js";
import type { Effect, Harness } from "../harness/types.js";
import { attach } from "./context.js";

/** How a wrapped tool's calls are keyed and repeated. */
export interface IdempotentSdkToolOptions<A> {
  /** How the tool's side effect behaves when repeated; see `Effect`. */
  effect: Effect;
  /**
   * The task every call belongs to: a string when the server is made per session, or a function of the call's
   * arguments and the handler's `extra`. Take it from the Claude Agent SDK session, which `query()` keeps across
   * `resume` (set it yourself with `options.sessionId`, or read `session_id` from the `system` init message), plus the
   * user turn the session is answering when one session serves many turns. Never a value drawn per process or per
   * query call: a resumed session would not recognise the calls it repeats.
   * @example taskId: `${sessionId}:${turnId}`
   */
  taskId: string | ((args: A, extra: unknown) => string);
  /**
   * The natural identity of a call, as `defineTool`'s `identity`.
   * @default all the arguments
   */
  identity?: (args: A) => unknown;
}

/** An error result of the tool's own: not recorded, handed back unchanged. */
class ErrorResult extends ToolCallError {
  constructor(readonly result: CallToolResult) {
    super("the tool returned an error result", { retryable: false });
  }
}

/**
 * A tool made with the Claude Agent SDK's `tool()`, whose handler runs through `harness.call`: the same name,
 * description, input schema and annotations, so Claude sees the same tool when `createSdkMcpServer({ tools })`
 * serves it, and each call keyed by the task id, the tool's name and its arguments. A call Claude makes again after a
 * resumed session, a retried turn or a crash takes effect once and gets the recorded result. An error result
 * (`isError: true`) is handed back and not recorded, so the next call runs again with the same key. The handler reads
 * its key with `idemkeyContext(extra)`.
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
  const { effect, identity, taskId } = options;
  const taskIdOf = resolveTaskId(taskId);
  const handler = definition.handler as (args: unknown, extra: unknown) => Promise<CallToolResult>;
  // Validates effect and identity now, once.
  const base = defineTool<unknown, unknown>({
    name: definition.name,
    effect,
    identity: identity as ((args: unknown) => unknown) | undefined,
    run: () => null,
  });

  return {
    ...definition,
    handler: async (args: unknown, extra: unknown): Promise<CallToolResult> => {
      const signal = (extra as { signal?: unknown } | undefined)?.signal;
      const call = defineTool<unknown, CallToolResult>({
        name: base.name,
        effect: base.effect,
        identity: base.identity,
        run: async (input, ctx) => {
          const own =
            typeof extra === "object" && extra !== null
              ? { ...extra, signal: ctx.signal }
              : { signal: ctx.signal };
          const result = await handler(input, attach(own, ctx));
          if (result?.isError === true) throw new ErrorResult(result);
          return result;
        },
      });
      try {
        return await harness.call(
          taskIdOf(args, extra),
          call,
          args,
          signal instanceof AbortSignal ? { signal } : undefined,
        );
      } catch (error) {
        if (error instanceof ErrorResult) return error.result;
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
