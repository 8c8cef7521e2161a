import type { ToolMessage as Message } from "@langchain/core/messages";
import { ErrorAnswer } from "../errors/error-answer.js";
import { isErrorAnswer, isOutcomeUnknownError } from "../errors/guards.js";
import { ToolCallError } from "../errors/tool-call-error.js";
import { defineTool } from "../harness/define-tool.js";
import { modelTextsOf, outcomeUnknownText } from "../harness/model-texts.js";
import { Effect, type Harness, type ToolPolicy } from "../harness/types.js";
import { calls } from "../langgraph/context.js";
import { defaultTaskId } from "../langgraph/task-id.js";
import { textOf, toolMessages } from "../langgraph/tool-message.js";
import { importPeer } from "../peer/import-peer.js";

const { ToolMessage, unknownMessage, withReplayedText } = await toolMessages("idemkey/langchain");

const { createMiddleware } = await importPeer("idemkey/langchain", "langchain", () => import("langchain"));

export type { ToolPolicy };

export interface IdempotencyMiddlewareOptions {
  /**
   * The effect (or the effect, identity and `noEffect` classifier) of each tool the middleware guards, by name. A
   * tool not named here runs untouched, so name every tool with a side effect. A `noEffect` classifier is given a
   * message with `status: "error"` as an `ErrorAnswer` whose `answer` is the message: when it says `true`, the model
   * gets the message unchanged and the same call may run again later; otherwise an `unguarded` call's outcome is
   * unknown (docs/integration-contract.md).
   * @example
   * effects: {
   *   refund: "keyed",
   *   pay: { effect: "unguarded", noEffect: (e) => isErrorAnswer(e) && (e.answer as ToolMessage).content === "insufficient funds" },
   * }
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

/**
 * LangChain `createAgent` middleware that runs the named tools' calls through `harness.call`, on the agent's
 * tool-call hook (`wrapToolCall`): the tools stay the app's own, and each call is keyed by the task id, the tool's name
 * and the arguments the model sent. What is recorded is the tool message's content (and artifact); a repeat gets a
 * new message under its own tool call id, the harness's `modelTexts.replayed` text before that content. A tool whose
 * answer is a `Command` cannot be recorded and fails. A message with `status: "error"` follows the one rule of
 * docs/integration-contract.md: handed back unchanged when the call had no effect (a `keyed` tool, or the policy's
 * `noEffect` says so); otherwise the outcome is unknown, and the model reads `modelTexts.outcomeUnknown` in an error
 * message, as it does for a tool that threw.
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
        `options.effects.${name} must be one of ${Object.values(Effect).join(", ")} or { effect, identity, noEffect }`,
      );
    }
    // Validates the identity now, once.
    defineTool({ name, ...policy, run: () => null });
    policies.set(name, policy);
  }
  const texts = modelTextsOf(harness);

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
          if (answer.status === "error") {
            throw new ErrorAnswer(answer, { tool: toolCall.name, text: textOf(answer) });
          }
          return answer.artifact === undefined
            ? { content: answer.content }
            : { content: answer.content, artifact: answer.artifact };
        },
      });
      try {
        const { value: recorded, replayed } = await harness.callWithOutcome(
          id,
          call,
          toolCall.args,
          runtime.signal ? { signal: runtime.signal } : undefined,
        );
        const message = new ToolMessage({
          content: recorded.content as string,
          tool_call_id: toolCall.id ?? "",
          name: toolCall.name,
          status: "success",
          ...(recorded.artifact === undefined ? {} : { artifact: recorded.artifact }),
        });
        if (!replayed) return message;
        const key = harness.key(id, call, toolCall.args);
        return withReplayedText(message, texts.replayed({ tool: toolCall.name, key }));
      } catch (error) {
        if (isErrorAnswer(error)) return error.answer as Message;
        if (isOutcomeUnknownError(error)) {
          return unknownMessage(outcomeUnknownText(texts, toolCall.name, error), toolCall);
        }
        throw error;
      }
    },
  });
}
