import { AsyncLocalStorage } from "node:async_hooks";
import type { ToolCall } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { type ApprovalRequest, callWithApproval } from "../approval/index.js";
import { ErrorAnswer } from "../errors/error-answer.js";
import { isErrorAnswer, isOutcomeUnknownError } from "../errors/guards.js";
import { defineTool } from "../harness/define-tool.js";
import { modelTextsOf, outcomeUnknownText } from "../harness/model-texts.js";
import type { NoEffect } from "../harness/retry.js";
import type { Effect, Harness } from "../harness/types.js";
import { importPeer } from "../peer/import-peer.js";
import { calls } from "./context.js";
import { resolveTaskId } from "./task-id.js";
import { textOf, toolMessages } from "./tool-message.js";

const { ToolMessage, unknownMessage, withReplayedText } = await toolMessages("idemkey/langgraph");

const { tool } = await importPeer(
  "idemkey/langgraph",
  "@langchain/core",
  () => import("@langchain/core/tools"),
);
const { interrupt } = await importPeer(
  "idemkey/langgraph",
  "@langchain/langgraph",
  () => import("@langchain/langgraph"),
);

/** How a wrapped tool's calls are keyed, repeated and approved. */
export interface IdempotentToolOptions<A = unknown> {
  /** How the tool's side effect behaves when repeated; see `Effect`. */
  effect: Effect;
  /**
   * The natural identity of a call, as `defineTool`'s `identity`: the key is derived from what it returns instead of
   * from all the input, so a call the model re-words is still the same call. It is given the input as the model (or
   * the caller of `invoke`) sent it, before the schema's defaults and transforms.
   * @default all the input as sent
   */
  identity?: (input: A) => unknown;
  /**
   * Says which failures certainly had no effect, as `defineTool`'s `noEffect`: matters for an `unguarded` tool,
   * whose other failures leave the call's outcome unknown and its key locked. A thrown error arrives as thrown; a
   * `ToolMessage` with `status: "error"` the tool returns arrives as an `ErrorAnswer` whose `answer` is the message.
   * When it says `true`, the failure reaches the `ToolNode` unchanged and the same call may run again later.
   * @default none: only an error that says `noEffect: true` itself had no effect
   * @example noEffect: (error) => error instanceof CardDeclinedError
   */
  noEffect?: NoEffect;
  /**
   * Asks a person before the first run, through LangGraph's `interrupt()`: the graph stops with an `ApprovalRequest`
   * carrying the call's key, and `new Command({ resume: { key, approve, reason? } })` records the decision against
   * that key in the ledger. Needs a checkpointer, as every interrupt does.
   * @default false
   */
  requiresApproval?: boolean;
  /**
   * The task every call belongs to, from the runnable config the tool is called with. The default is the thread id
   * and the subgraph path (see `defaultTaskId`): stable across interrupts, resumes and restarts of a thread, but
   * broad, since a thread can live for many turns. A chat whose thread spans turns should add the turn:
   * @default defaultTaskId: the thread id and the node / subgraph names
   * @example taskId: (config) => `${config?.configurable?.thread_id}:${config?.configurable?.turn_id}`
   */
  taskId?: (config: RunnableConfig | undefined) => string;
}

/** What `invoke` saw of a call before LangChain parsed it, and what the tool found out for the message. */
interface Invocation {
  /** The input as sent: a tool call's `args`, or the input handed to `invoke`. */
  readonly input: unknown;
  /** Set when the output was answered from the ledger, with the text the model reads before it. */
  replayedText?: string;
}

/** Carries the input as sent from the wrapper's `invoke` to its function, past LangChain's parse. */
const invocations = new AsyncLocalStorage<Invocation>();

/**
 * A LangChain tool (made with `tool()` from `@langchain/core/tools`, or any structured tool) whose calls run through
 * `harness.callWithOutcome`: the same name, description, schema and response format, so the model and a `ToolNode`
 * see the same tool, and each call keyed by the task id, the tool's name and its input as the model sent it (never
 * a value the schema generated, such as `z.string().default(() => randomUUID())`). LangGraph re-runs a node from its
 * start when it resumes after an `interrupt()`, retries it, or replays it after a crash; the wrapped tool takes
 * effect once and the repeat gets the recorded output (with `responseFormat: "content_and_artifact"`, the content
 * and the artifact). The tool reads its key with `idemkeyContext()` and must return JSON (a string, say).
 *
 * Called with a tool call (as a `ToolNode` does), the model reads the harness's `modelTexts.replayed` text before a
 * replayed message's content, and an error `ToolMessage` with `modelTexts.outcomeUnknown` when the outcome is
 * unknown; called with its input, the output is the recorded value and an unknown outcome throws
 * `OutcomeUnknownError`. A failure follows the one rule of docs/integration-contract.md (see `noEffect`).
 *
 * @example
 * const refund = idempotentTool(harness, tool(async (input) => payments.refund(input, idemkeyContext()?.idempotencyKey),
 *   { name: "refund", description: "Refund a payment.", schema: z.object({ paymentId: z.string() }) }), { effect: "keyed" });
 * const tools = new ToolNode([refund]);
 */
export function idempotentTool<T extends StructuredToolInterface>(
  harness: Harness,
  wrapped: T,
  options: IdempotentToolOptions<Parameters<T["invoke"]>[0]>,
): T {
  if (typeof harness !== "object" || harness === null || typeof harness.call !== "function") {
    throw new TypeError("harness must be a harness made by createHarness()");
  }
  if (typeof wrapped !== "object" || wrapped === null || typeof wrapped.invoke !== "function") {
    throw new TypeError("tool must be a LangChain tool (made with tool() from @langchain/core/tools)");
  }
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const { effect, identity, noEffect, requiresApproval = false } = options;
  const taskIdOf = resolveTaskId(options.taskId);
  const texts = modelTextsOf(harness);
  const withArtifact = (wrapped as { responseFormat?: unknown }).responseFormat === "content_and_artifact";
  // Validates effect, identity, noEffect and requiresApproval now, once, with the tool's own name.
  const call = defineTool<unknown, unknown>({
    name: wrapped.name,
    effect,
    identity: identity as ((input: unknown) => unknown) | undefined,
    noEffect,
    requiresApproval,
    run: () => null,
  });

  const outer = tool(
    async (parsed: unknown, config?: RunnableConfig) => {
      const invocation = invocations.getStore();
      // Only a call that did not come through `invoke` (LangChain's deprecated `call`) lacks the input as sent.
      const input = invocation === undefined ? parsed : invocation.input;
      const taskId = taskIdOf(config);
      const signal = config?.signal;
      const run = defineTool<unknown, unknown>({
        ...call,
        run: (args, ctx) => calls.run(ctx, () => runInner(wrapped, args, config, withArtifact)),
      });
      const done = requiresApproval
        ? // interrupt() throws LangGraph's GraphInterrupt the first time; on resume it returns the person's decision.
          await callWithApproval(harness, taskId, run, input, signal, (request: ApprovalRequest) =>
            interrupt(request),
          )
        : await harness.callWithOutcome(taskId, run, input, signal ? { signal } : undefined);
      if (done === undefined) return undefined;
      const { value, replayed } = done;
      if (replayed && invocation !== undefined) {
        invocation.replayedText = texts.replayed({ tool: call.name, key: harness.key(taskId, run, input) });
      }
      return value;
    },
    {
      name: wrapped.name,
      description: wrapped.description,
      schema: wrapped.schema as never,
      ...(withArtifact ? { responseFormat: "content_and_artifact" as const } : {}),
      ...(wrapped.returnDirect ? { returnDirect: true } : {}),
    },
  );

  const invoke = outer.invoke.bind(outer);
  // LangChain parses the input (filling in defaults) before the tool's function runs: the key is taken here, before.
  const invokeAsSent = async (input: unknown, config?: RunnableConfig): Promise<unknown> => {
    const toolCall = isToolCall(input) ? input : (config as { toolCall?: ToolCall } | undefined)?.toolCall;
    const invocation: Invocation = { input: isToolCall(input) ? input.args : input };
    try {
      const output = await invocations.run(invocation, () => invoke(input as never, config));
      if (invocation.replayedText === undefined || !ToolMessage.isInstance(output)) return output;
      return withReplayedText(output, invocation.replayedText);
    } catch (error) {
      if (isErrorAnswer(error) && ToolMessage.isInstance(error.answer)) return error.answer;
      if (toolCall !== undefined && isOutcomeUnknownError(error)) {
        return unknownMessage(outcomeUnknownText(texts, call.name, error), {
          id: toolCall.id,
          name: call.name,
        });
      }
      throw error;
    }
  };
  outer.invoke = invokeAsSent as typeof outer.invoke;
  return outer as unknown as T;
}

/**
 * Runs the wrapped tool for the ledger. Given the outer call's `toolCall` it would answer with a `ToolMessage`,
 * whose id differs on every re-sampled turn, so it is invoked with the input alone; a tool whose answer has an
 * artifact is invoked as a call of its own, since LangChain drops the artifact from an answer that is not a
 * message, and its content and artifact are recorded as the tool returned them, for the outer tool to format.
 */
async function runInner(
  wrapped: StructuredToolInterface,
  args: unknown,
  config: RunnableConfig | undefined,
  withArtifact: boolean,
): Promise<unknown> {
  const inner = withoutToolCall(config);
  const id = (config as { toolCall?: ToolCall } | undefined)?.toolCall?.id ?? "idemkey";
  const output: unknown = withArtifact
    ? await wrapped.invoke({ type: "tool_call", id, name: wrapped.name, args } as never, inner)
    : await wrapped.invoke(args as never, inner);
  if (!ToolMessage.isInstance(output)) return output;
  if (output.status === "error") {
    throw new ErrorAnswer(output, { tool: wrapped.name, text: textOf(output) });
  }
  return withArtifact ? [output.content, output.artifact ?? null] : output;
}

function isToolCall(input: unknown): input is ToolCall {
  return typeof input === "object" && input !== null && (input as { type?: unknown }).type === "tool_call";
}

function withoutToolCall(config: RunnableConfig | undefined): RunnableConfig | undefined {
  if (config === undefined) return undefined;
  const { toolCall: _ignored, ...rest } = config as RunnableConfig & { toolCall?: unknown };
  return rest;
}
