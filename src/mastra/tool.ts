import { type ApprovalRequest, callWithApproval } from "../approval/index.js";
import { defineTool } from "../harness/define-tool.js";
import { modelTextsOf } from "../harness/model-texts.js";
import type { NoEffect } from "../harness/retry.js";
import type { Effect, Harness } from "../harness/types.js";
import { importPeer } from "../peer/import-peer.js";
import { calls } from "./context.js";
import { modelOutput } from "./model-output.js";
import { passThrough } from "./pass-through.js";

const { createTool } = await importPeer("idemkey/mastra", "@mastra/core", () => import("@mastra/core/tools"));

/** What a wrapped tool's `execute` reads of Mastra's execution context. */
interface MastraContext {
  workflow?: { runId?: string; suspend?: (payload: unknown) => Promise<void>; resumeData?: unknown };
  agent?: { threadId?: string; toolCallId?: string };
  suspend?: (payload: unknown) => Promise<void>;
  resumeData?: unknown;
  abortSignal?: AbortSignal;
}

/** What `idempotentMastraTool` reads of a tool made by `createTool`. */
interface MastraTool {
  id: string;
  // `| undefined`: Mastra's Tool declares it so, which a project under exactOptionalPropertyTypes (tsc --init's default)
  // must be able to pass.
  execute?: ((input: never, context: never) => Promise<unknown>) | undefined;
  inputSchema?: unknown;
  outputSchema?: unknown;
  toModelOutput?: (output: never) => unknown;
  requireApproval?: unknown;
  suspendSchema?: unknown;
}

/** How a wrapped tool's calls are keyed, repeated and approved. */
export interface IdempotentMastraToolOptions<I = unknown> {
  /** How the tool's side effect behaves when repeated; see `Effect`. */
  effect: Effect;
  /**
   * The natural identity of a call, as `defineTool`'s `identity`.
   * @default all the input
   */
  identity?: (input: I) => unknown;
  /** Which failures certainly had no effect: see `ToolDefinition.noEffect`. @default none */
  noEffect?: NoEffect;
  /**
   * The task every call belongs to, from the tool's input and Mastra's execution context. The default is the workflow
   * run id (`context.workflow.runId`), which Mastra keeps in the run's snapshot across suspend, resume and restart;
   * start a run again under the same id (`createRun({ runId })`) to repeat it. A tool called by an agent has no run id
   * in its context: pass one, from what the agent call is answering (a thread and message id).
   * @default (input, context) => context.workflow.runId
   * @example taskId: (input, context) => `${context.agent?.threadId}:${messageId}`
   */
  taskId?: (input: I, context: MastraContext) => string;
}

/**
 * A tool made by Mastra's `createTool`, whose `execute` runs through `harness.call`: the same id, description and
 * schemas, each call keyed by the task id, the tool's id and its input as the model (or the step) sent it, before
 * the schema fills in defaults (a generated one, `default(() => randomUUID())`, would give every replay a new key);
 * the tool's `execute` still gets the input as its schema makes it. An agent's model reads the harness's `modelTexts`:
 * before the output of a call answered from the ledger (through `toModelOutput`, after the tool's own; an object
 * output, which a tool with an `outputSchema` returns), and as the error of a call whose outcome is unknown (an
 * `OutcomeUnknownError` whose `cause` is the harness's). A step that Mastra runs again from its start
 * (after `suspend()`, on a retry of a failed step, on a restarted run) takes effect once and gets the recorded
 * output. The tool reads its key with `idemkeyContext()` and must return JSON.
 *
 * A tool made with `requireApproval` gets idemkey's key-bound approval in place of Mastra's: the call suspends with an
 * `ApprovalRequest` carrying its key, and `run.resume({ resumeData: { key, approve, reason? } })` records the decision
 * in the ledger; a denied call stays denied on every later resume or restart of the run. Mastra's own approval prompt
 * is turned off on the wrapped tool, since it asks before any key exists. The approval uses the tool's suspend
 * channel, so a tool with a `suspendSchema` of its own cannot also require approval.
 *
 * @example
 * const refund = idempotentMastraTool(harness, createTool({ id: "refund", inputSchema, execute }), { effect: "keyed" });
 * const step = createStep(refund);
 */
export function idempotentMastraTool<T extends MastraTool>(
  harness: Harness,
  tool: T,
  options: IdempotentMastraToolOptions<Parameters<NonNullable<T["execute"]>>[0]>,
): T {
  if (typeof harness !== "object" || harness === null || typeof harness.call !== "function") {
    throw new TypeError("harness must be a harness made by createHarness()");
  }
  if (typeof tool !== "object" || tool === null || typeof tool.execute !== "function") {
    throw new TypeError("tool must be a tool made by createTool() from @mastra/core/tools, with an execute");
  }
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const { effect, identity, noEffect } = options;
  const taskIdOf = resolveTaskId(options.taskId);
  const approval = tool.requireApproval;
  if (approval !== undefined && typeof approval !== "boolean" && typeof approval !== "function") {
    throw new TypeError("tool.requireApproval must be a boolean or a function");
  }
  if (approval && tool.suspendSchema !== undefined) {
    throw new TypeError(
      `The tool "${tool.id}" has a suspendSchema of its own: its requireApproval cannot also suspend for idemkey's approval`,
    );
  }
  const execute = tool.execute as (input: unknown, context: unknown) => Promise<unknown>;
  const base = defineTool<unknown, unknown>({
    name: tool.id,
    effect,
    identity: identity as ((input: unknown) => unknown) | undefined,
    noEffect,
    run: () => null,
  });

  const told = modelOutput(
    modelTextsOf(harness),
    tool.id,
    tool.toModelOutput as ((output: unknown) => unknown) | undefined,
  );
  const wrapped = {
    ...tool,
    // The key is made from the input as sent; the tool's own execute applies the schemas.
    inputSchema: passThrough(tool.inputSchema),
    outputSchema: passThrough(tool.outputSchema),
    toModelOutput: told.toModelOutput,
    // idemkey asks instead, bound to the key.
    requireApproval: false,
    execute: async (input: unknown, context: MastraContext) => {
      const taskId = taskIdOf(input, context);
      const ask =
        typeof approval === "function"
          ? Boolean(await (approval as (input: unknown, ctx: unknown) => unknown)(input, context))
          : approval === true;
      const call = defineTool<unknown, unknown>({
        name: base.name,
        effect: base.effect,
        identity: base.identity,
        noEffect: base.noEffect,
        requiresApproval: ask,
        run: (args, ctx) => calls.run(ctx, () => execute(args, { ...context, abortSignal: ctx.signal })),
      });
      const signal = context?.abortSignal;
      try {
        if (!ask) {
          const done = await harness.callWithOutcome(taskId, call, input, signal ? { signal } : undefined);
          if (done.replayed) told.replayed(done.value, harness.key(taskId, call, input));
          return done.value;
        }
        const done = await callWithApproval(
          harness,
          taskId,
          call,
          input,
          signal,
          async (request: ApprovalRequest) => {
            // A tool run as a workflow step finds them under `workflow`, one run by an agent at the top.
            const resumeData = context?.resumeData ?? context?.workflow?.resumeData;
            if (resumeData !== undefined) return resumeData;
            const suspend = context?.suspend ?? context?.workflow?.suspend;
            if (typeof suspend !== "function") {
              throw new TypeError(
                `The tool "${tool.id}" needs approval, and Mastra gave it no suspend() to ask with`,
              );
            }
            await suspend(request);
            return undefined;
          },
        );
        if (done?.replayed) told.replayed(done.value, harness.key(taskId, call, input));
        return done?.value;
      } catch (error) {
        throw told.thrown(error);
      }
    },
  };
  return createTool(wrapped as never) as unknown as T;
}

function resolveTaskId(taskId: unknown): (input: unknown, context: MastraContext) => string {
  if (taskId !== undefined && typeof taskId !== "function") {
    throw new TypeError(
      `options.taskId must be a function of the input and the context, got ${typeof taskId}`,
    );
  }
  return (input, context) => {
    const id =
      taskId === undefined
        ? context?.workflow?.runId
        : (taskId as (i: unknown, c: unknown) => unknown)(input, context);
    if (typeof id !== "string" || id.length === 0) {
      throw new TypeError(
        taskId === undefined
          ? "idemkey/mastra takes the task id from the workflow run id, and this call has none (an agent's tool " +
              "call?): pass options.taskId"
          : `options.taskId must return a non-empty string, got ${id === "" ? "an empty string" : typeof id}`,
      );
    }
    return id;
  };
}
