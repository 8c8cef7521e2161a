import type { RunnableConfig } from "@langchain/core/runnables";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { type ApprovalRequest, callWithApproval } from "../approval/index.js";
import { defineTool } from "../harness/define-tool.js";
import type { Effect, Harness } from "../harness/types.js";
import { importPeer } from "../peer/import-peer.js";
import { calls } from "./context.js";
import { resolveTaskId } from "./task-id.js";

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
   * from all the input, so a call the model re-words is still the same call.
   * @default all the (parsed) input
   */
  identity?: (input: A) => unknown;
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

/**
 * A LangChain tool (made with `tool()` from `@langchain/core/tools`, or any structured tool) whose calls run through
 * `harness.call`: the same name, description and schema, so the model and a `ToolNode` see the same tool, and each
 * call keyed by the task id, the tool's name and its input. LangGraph re-runs a node from its start when it resumes
 * after an `interrupt()`, retries it, or replays it after a crash; the wrapped tool takes effect once and the repeat
 * gets the recorded output. The tool reads its key with `idemkeyContext()` and must return JSON (a string, say).
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
  const { effect, identity, requiresApproval = false } = options;
  const taskIdOf = resolveTaskId(options.taskId);
  // Validates effect, identity and requiresApproval now, once, with the tool's own name.
  const call = defineTool<unknown, unknown>({
    name: wrapped.name,
    effect,
    identity: identity as ((input: unknown) => unknown) | undefined,
    requiresApproval,
    run: () => null,
  });

  return tool(
    async (input: unknown, config?: RunnableConfig) => {
      const taskId = taskIdOf(config);
      const signal = config?.signal;
      const run = defineTool<unknown, unknown>({
        ...call,
        run: (args, ctx) =>
          calls.run(ctx, () => wrapped.invoke(args as never, withoutToolCall(config)) as Promise<unknown>),
      });
      if (requiresApproval) {
        // interrupt() throws LangGraph's GraphInterrupt the first time; on resume it returns the person's decision.
        const done = await callWithApproval(harness, taskId, run, input, signal, (request: ApprovalRequest) =>
          interrupt(request),
        );
        return done?.value;
      }
      return harness.call(taskId, run, input, signal ? { signal } : undefined);
    },
    {
      name: wrapped.name,
      description: wrapped.description,
      schema: wrapped.schema as never,
      ...(wrapped.returnDirect ? { returnDirect: true } : {}),
    },
  ) as unknown as T;
}

/**
 * The inner tool is invoked with the input alone: given the outer call's `toolCall` it would answer with a
 * `ToolMessage`, which is not the output the ledger should record (its id differs on every re-sampled turn).
 */
function withoutToolCall(config: RunnableConfig | undefined): RunnableConfig | undefined {
  if (config === undefined) return undefined;
  const { toolCall: _ignored, ...rest } = config as RunnableConfig & { toolCall?: unknown };
  return rest;
}
