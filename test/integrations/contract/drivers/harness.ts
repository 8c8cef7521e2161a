import { defineTool, type Harness, OutcomeUnknownError } from "../../../../src/index.js";
import type { Driver } from "../driver.js";
import type { World } from "../world.js";

/** The same row on a harness made another way (`tracedHarness`): what that way adds must change no outcome. */
export function harnessDriverOf(name: string, makeHarness: (world: World) => Harness): Driver {
  return {
    name,
    cannot: {
      "schema default": "the harness takes the arguments themselves: there is no schema to generate a field",
    },
    async open(world) {
      const harness = makeHarness(world);
      const { effect, noEffect } = world.spec;
      const tool = defineTool<object, unknown>({
        name: world.spec.name,
        effect,
        noEffect,
        run: (_args, ctx) => world.owner.act(ctx.idempotencyKey),
      });
      return {
        async call(args, options) {
          const context = { tool: world.spec.name, key: harness.key(world.taskId, tool, args) };
          try {
            const { value, replayed } = await harness.callWithOutcome(world.taskId, tool, args, options);
            const text = JSON.stringify(value);
            return { text: replayed ? `${harness.modelTexts.replayed(context)}\n${text}` : text };
          } catch (error) {
            if (error instanceof OutcomeUnknownError) {
              return { error, text: harness.modelTexts.outcomeUnknown(context) };
            }
            throw error;
          }
        },
      };
    },
  };
}

/**
 * The bare harness, called as an adapter should call it: `callWithOutcome`, and the harness's model texts for a
 * replay and for an unknown outcome. The reference row every framework's row is read against.
 */
export const harnessDriver: Driver = harnessDriverOf("harness (callWithOutcome)", (world) => world.harness());
