import {
  createHarness,
  defineTool,
  type Harness,
  type HarnessOptions,
  OutcomeUnknownError,
  outcomeUnknownText,
  type Tool,
  WaitTimeoutError,
} from "../../../../src/index.js";
import type { Driver } from "../driver.js";
import type { Seen, World } from "../world.js";

/** Makes a process's harness on `options` (the world's, plus what a row adds). */
export type MakeHarness = (world: World, options: HarnessOptions) => Harness;

/** The same row on a harness made another way (`tracedHarness`): what that way adds must change no outcome. */
export function harnessDriverOf(name: string, makeHarness: MakeHarness): Driver {
  const refund = (world: World, requiresApproval: boolean) =>
    defineTool<object, unknown>({
      name: world.spec.name,
      effect: world.spec.effect,
      noEffect: world.spec.noEffect,
      requiresApproval,
      run: (_args, ctx) => world.owner.act(ctx.idempotencyKey),
    });
  return {
    name,
    cannot: {
      "schema default": "the harness takes the arguments themselves: there is no schema to generate a field",
    },
    async open(world) {
      const harness = makeHarness(world, world.harnessOptions());
      const tool = refund(world, false);
      return { call: (args, options) => answer(world, harness, tool, args, options) };
    },
    async askApproval(world, args) {
      // A harness that asks the person and comes back later: the call parks its key and returns at once.
      const harness = makeHarness(world, { ...world.harnessOptions(), approvalTimeoutMs: 0 });
      const tool = refund(world, true);
      const settle = (): Promise<Seen> =>
        answer(world, harness, tool, args).catch((error: unknown) => ({ error, text: String(error) }));
      try {
        return await answer(world, harness, tool, args);
      } catch (error) {
        if (!(error instanceof WaitTimeoutError && error.state === "awaiting_approval")) {
          return { error, text: String(error) };
        }
        const { key } = error;
        return {
          key,
          async decide(decision) {
            await (decision.approve ? harness.approve(key) : harness.deny(key, decision.reason));
            return settle();
          },
        };
      }
    },
  };
}

/**
 * A call as an adapter should make it: `callWithOutcome`, and the harness's model texts for a replay and an unknown
 * (`outcomeUnknownText`, which words the error's reason and the tool's answer).
 */
async function answer(
  world: World,
  harness: Harness,
  tool: Tool<object, unknown>,
  args: object,
  options?: { signal?: AbortSignal },
): Promise<Seen> {
  const context = { tool: world.spec.name, key: harness.key(world.taskId, tool, args) };
  try {
    const { value, replayed } = await harness.callWithOutcome(world.taskId, tool, args, options);
    const text = JSON.stringify(value);
    return { text: replayed ? `${harness.modelTexts.replayed(context)}\n${text}` : text };
  } catch (error) {
    if (error instanceof OutcomeUnknownError) {
      return { error, text: outcomeUnknownText(harness.modelTexts, world.spec.name, error) };
    }
    throw error;
  }
}

/**
 * The bare harness, called as an adapter should call it: `callWithOutcome`, and the harness's model texts for a
 * replay and for an unknown outcome. The reference row every framework's row is read against.
 */
export const harnessDriver: Driver = harnessDriverOf("harness (callWithOutcome)", (_world, options) =>
  createHarness(options),
);
