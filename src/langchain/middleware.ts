import { ToolCallError } from "../errors/tool-call-error.js";
import { defineTool } from "../harness/define-tool.js";
import { Effect, type Harness, type ToolPolicy } from "../harness/types.js";
import { calls } from "../langgraph/context.js";
import { defaultTaskId } from "../langgraph/task-id.js";
import { importPeer } from "../peer/import-peer.js";

const { ToolMessage } = await importPeer(
  "idemkey/langchain",
  "@langchain/core",
  () => import("@langchain/core/messages"),
);
type ToolMessage = InstanceType<typeof ToolMessage>;
const { createMiddleware } = await importPeer("idemkey/langchain", "langchain", () => import("langchain"));

export type { ToolPolicy };

export interface IdempotencyMiddlewareOptions {
  /**
   * The effect (or the effect and identity) of each tool the middleware guards, by name. A tool not named here runs
   * untouched, so name every tool with a side effect.
   * @example effects: { refund: "keyed", send_email: { effect: "keyed", identity: (a) => a.to } }
   */
  effects: { [tool: string]: Effect | ToolPolicy };
  /**
   * The task every call belongs to, from the agent's runtime. The default is `defaultTaskId` of `idemkey/langgraph`:
   * the thread id (`configurable.thread_id` of the invoke), which the agent's checkpointer keeps across interrupts and
   * resumes, and the node it runs in, as `["<thread id>", "tools"]`.
   * @default the thread id and the node
   * @example taskId: (runtime) => `${runtime.configurable?.thread_id}:${runtime.context.turnId}`
   */
  taskId?: (runtime: { configurable?: { [key: string]: unknown }; context?: unknown }) => string;
}

/** A tool's error answer: handed back to the model, not recorded. */
class ErrorMessage extends ToolCallError {
  constructor(readonly answer: ToolMessage) {
    super("the tool answered with an error", { retryable: false });
  }
}

/**
 * LangChain `createAgent` middleware that runs the named tools' calls through `harness.call`, on the agent's
 * tool-call hook (`wrapToolCall`): the tools stay the app's own, and each call is keyed by the task id, the tool's name
 * and its arguments. What is recorded is the tool message's content (and artifact); a repeat gets a new message with
 * that content under its own tool call id. A tool whose answer is a `Command` cannot be recorded and fails; a message
 * with `status: "error"` is handed back and not recorded, so the next call runs again with the same key.
 *
 * @example
 * const agent = createAgent({ model, tools, checkpointer, middleware: [idempotencyMiddleware(harness, { effects: { refund: "keyed" } })] });
 */
export function idempotencyMiddleware(harness: Harness, options: IdempotencyMiddlewareOptions) {
  if (typeof harness !== "object" || harness === null || typeof harness.call !== "function") {
    throw new TypeError("harness must be a harness made by createHarness()");
  }
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  if (typeof options.effects !== "object" || options.effects === null) {
    throw new TypeError("options.effects must be an object of effects by tool name");
  }
  const { taskId } = options;
  if (taskId !== undefined && typeof taskId !== "function") {
    throw new TypeError(`options.taskId must be a function of the runtime, got ${typeof taskId}`);
  }
  const policies = new Map<string, ToolPolicy>();
  for (const [name, entry] of Object.entries(options.effects)) {
    const policy = typeof entry === "string" ? { effect: entry } : entry;
    if (typeof policy !== "object" || policy === null || !Object.values(Effect).includes(policy.effect)) {
      throw new TypeError(
        `options.effects.${name} must be one of ${Object.values(Effect).join(", ")} or { effect, identity }`,
      );
    }
    // Validates the identity now, once.
    defineTool({ name, ...policy, run: () => null });
    policies.set(name, policy);
  }

  return createMiddleware({
    name: "idemkey",
    wrapToolCall: async (request, handler) => {
      const { toolCall } = request;
      const policy = policies.get(toolCall.name);
      if (policy === undefined) return handler(request);
      const runtime = request.runtime as { configurable?: { [key: string]: unknown }; signal?: AbortSignal };
      const id =
        taskId === undefined ? defaultTaskId({ configurable: runtime.configurable }) : taskId(runtime);
      if (typeof id !== "string" || id.length === 0) {
        throw new TypeError(`options.taskId must return a non-empty string, got ${typeof id}`);
      }
      const call = defineTool<unknown, { content: unknown; artifact?: unknown }>({
        name: toolCall.name,
        ...policy,
        run: async (_args, ctx) => {
          const answer = await calls.run(ctx, () => handler(request));
          if (!ToolMessage.isInstance(answer)) {
            throw new ToolCallError(
              `The tool "${toolCall.name}" answered with a Command, which idemkey cannot record: return its output instead`,
              { retryable: false },
            );
          }
          if (answer.status === "error") throw new ErrorMessage(answer);
          return answer.artifact === undefined
            ? { content: answer.content }
            : { content: answer.content, artifact: answer.artifact };
        },
      });
      try {
        const recorded = await harness.call(
          id,
          call,
          toolCall.args,
          runtime.signal ? { signal: runtime.signal } : undefined,
        );
        return new ToolMessage({
          content: recorded.content as string,
          tool_call_id: toolCall.id ?? "",
          name: toolCall.name,
          ...(recorded.artifact === undefined ? {} : { artifact: recorded.artifact }),
        });
      } catch (error) {
        if (error instanceof ErrorMessage) return error.answer;
        throw error;
      }
    },
  });
}
