import { callInStep, checkHarness, checkTool, messageWithKey } from "../engines/call-in-step.js";
import type { Harness, Tool } from "../harness/types.js";
import { importPeer } from "../peer/import-peer.js";

const { NonRetriableError } = await importPeer("idemkey/inngest", "inngest", () => import("inngest"));

/** The part of an Inngest function's context that `run` uses: the triggering event, the run id and the step tools. */
export interface InngestContext {
  readonly event: { readonly id?: string | undefined; readonly name?: string | undefined };
  readonly runId?: string | undefined;
  readonly step: { run(id: string, fn: () => Promise<unknown>): Promise<unknown> };
}

/**
 * The event Inngest's scheduler sends for a cron tick. Its id is the tick's time (`2026-12-01T09:00:00Z`), the same
 * for every function whose schedule fires then, so it cannot tell their runs apart on its own.
 */
const CRON_EVENT = "inngest/scheduled.timer";

export interface InngestRunOptions<C extends InngestContext> {
  /**
   * The step's id, as `step.run(id, ...)` takes it, and part of the key. A second step with the same id in one
   * function is keyed `id#2`, a third `id#3`: Inngest replays a function's steps in the same order.
   * @default the tool's name
   */
  id?: string;
  /**
   * The task of the key, from what stays the same across every execution of the run: by default the triggering
   * event's id, which Inngest keeps for the run's step retries and for a replay or rerun of the function (which
   * draw a new run id), and which a new event changes. A cron tick's event id is the tick's time, shared by every
   * function scheduled then, so a cron-triggered run is keyed by the tick and its run id: a replay of it is a new
   * run. A function that shares its trigger event with another calling the same tools prefixes its own id.
   * @default (ctx) => ctx.event.id, or `${ctx.event.id}/${ctx.runId}` for `inngest/scheduled.timer`
   * @example taskId: (ctx) => `refund-order:${ctx.event.id}`
   */
  taskId?: (ctx: C) => string;
}

/**
 * How many steps of each id each execution has opened, by its step tools (the one object of an execution that a
 * caller passing `{ step, event }` does not rebuild); Inngest runs the function anew for each execution.
 */
const seen = new WeakMap<object, Map<string, number>>();

/**
 * `step.run` around `harness.call`: a step whose tool gets the key of the event id (with the run id for a cron tick)
 * and the step id, never the attempt, so every execution Inngest makes of the step, in any worker, forwards the
 * same `ctx.idempotencyKey`. A failure no retry can fix (an `unguarded` tool that may have taken effect, a result JSON
 * cannot hold, a denied approval, a `TypeError`, any error that says `retryable: false`) fails the step with a
 * `NonRetriableError` (Inngest does not retry it) whose `cause` is the original error and whose message names the
 * key (in the worker, `idemkeyError` and `idemkeyKey` carry them too; Inngest's run keeps the name, message and
 * cause).
 *
 * @example
 * inngest.createFunction({ id: "charge-order", triggers: [{ event: "order/placed" }] }, async (ctx) =>
 *   run(ctx, harness, chargeCard, { order: ctx.event.data.orderId, cents: ctx.event.data.cents }),
 * );
 */
export async function run<A, R, C extends InngestContext>(
  ctx: C,
  harness: Harness,
  tool: Tool<A, R>,
  args: A,
  options: InngestRunOptions<C> = {},
): Promise<R> {
  if (typeof ctx !== "object" || ctx === null || typeof ctx.step?.run !== "function") {
    throw new TypeError("ctx must be the context an Inngest function receives");
  }
  checkHarness(harness);
  checkTool(tool);
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const { id = tool.name, taskId } = options;
  if (typeof id !== "string" || id.length === 0) throw new TypeError("options.id must be a non-empty string");
  if (taskId !== undefined && typeof taskId !== "function") {
    throw new TypeError("options.taskId must be a function of the context");
  }
  const task = taskId === undefined ? defaultTask(ctx) : taskId(ctx);
  if (typeof task !== "string" || task.length === 0) {
    throw new TypeError(
      taskId === undefined
        ? "idemkey/inngest: the triggering event has no id (a cron tick: no id or run id) to key on; give options.taskId"
        : `options.taskId must return a non-empty string, got ${typeof task}`,
    );
  }
  const identity = { taskId: task, step: occurrence(ctx.step, id) };
  return (await ctx.step.run(id, () =>
    callInStep(harness, tool, args, {
      identity,
      final: (failure) =>
        Object.assign(new NonRetriableError(messageWithKey(failure), { cause: failure.error }), {
          idemkeyError: failure.name,
          idemkeyKey: failure.key,
        }),
    }),
  )) as R;
}

function defaultTask(ctx: InngestContext): string | undefined {
  const { event, runId } = ctx;
  if (event?.name !== CRON_EVENT) return event?.id;
  const tick = event.id;
  return typeof tick === "string" && typeof runId === "string" && tick.length > 0 && runId.length > 0
    ? `${tick}/${runId}`
    : undefined;
}

function occurrence(ctx: object, id: string): string {
  let counts = seen.get(ctx);
  if (counts === undefined) {
    counts = new Map();
    seen.set(ctx, counts);
  }
  const n = (counts.get(id) ?? 0) + 1;
  counts.set(id, n);
  return n === 1 ? id : `${id}#${n}`;
}
