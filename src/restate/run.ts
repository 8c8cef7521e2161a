import type { Context, RestatePromise, RunOptions } from "@restatedev/restate-sdk";
import { callInStep, checkHarness, checkTool } from "../engines/call-in-step.js";
import type { Harness, Tool } from "../harness/types.js";
import { importPeer } from "../peer/import-peer.js";

const { TerminalError } = await importPeer(
  "idemkey/restate",
  "@restatedev/restate-sdk",
  () => import("@restatedev/restate-sdk"),
);

/** `ctx.run`'s own options, plus the name of the run block. */
export interface RestateRunOptions<R> extends RunOptions<R> {
  /**
   * The name of the `ctx.run` block, shown in Restate's journal and part of the key. A second block with the same
   * name in one invocation is keyed `name#2`, a third `name#3`: Restate replays a handler's blocks in the same order.
   * @default the tool's name
   */
  name?: string;
}

/** How many run blocks of each name each handler attempt has opened; a replay starts with a fresh context. */
const seen = new WeakMap<object, Map<string, number>>();

/**
 * `ctx.run` around `harness.call`: a durable step whose tool gets the key of the invocation id (the same on every
 * retry of the invocation, and after its service process was killed and restarted; new for each invocation, except
 * that Restate derives it from the idempotency key of an idempotent request and from the key of a workflow's run,
 * so a workflow key run again after Restate's retention meets its earlier run's keys) and the block's name, never
 * the attempt. A keyed owner sees the same `ctx.idempotencyKey` on every attempt Restate makes. A failure no retry can
 * fix (an `unguarded` tool that may have taken effect, a result JSON cannot hold, a denied approval, a `TypeError`,
 * any error that says `retryable: false`) fails the block with a `TerminalError` (Restate does not retry it) whose
 * `cause` is the original error and whose metadata carries `idemkeyError` (its name) and `idemkeyKey`.
 *
 * @example
 * const receipt = await run(ctx, harness, chargeCard, { order: 42, cents: 1999 });
 */
export function run<A, R>(
  ctx: Context,
  harness: Harness,
  tool: Tool<A, R>,
  args: A,
  options: RestateRunOptions<R> = {},
): RestatePromise<R> {
  if (typeof ctx !== "object" || ctx === null || typeof ctx.run !== "function") {
    throw new TypeError("ctx must be the Restate context a handler receives");
  }
  checkHarness(harness);
  checkTool(tool);
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const { name = tool.name, ...runOptions } = options;
  if (typeof name !== "string" || name.length === 0) {
    throw new TypeError("options.name must be a non-empty string");
  }
  const identity = { taskId: ctx.request().id, step: occurrence(ctx, name) };
  return ctx.run(
    name,
    () =>
      callInStep(harness, tool, args, {
        identity,
        final: (failure) =>
          // TerminalError takes no cause option; in a replay Restate rebuilds it from the journal, with the
          // message and metadata only, so the metadata is what a caller can rely on.
          Object.assign(
            new TerminalError(failure.message, {
              metadata: {
                idemkeyError: failure.name,
                ...(failure.key === undefined ? {} : { idemkeyKey: failure.key }),
              },
            }),
            { cause: failure.error },
          ),
      }),
    runOptions,
  );
}

function occurrence(ctx: object, name: string): string {
  let counts = seen.get(ctx);
  if (counts === undefined) {
    counts = new Map();
    seen.set(ctx, counts);
  }
  const n = (counts.get(name) ?? 0) + 1;
  counts.set(name, n);
  return n === 1 ? name : `${name}#${n}`;
}
