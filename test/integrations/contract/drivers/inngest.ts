import { InngestTestEngine } from "@inngest/test";
import { Inngest } from "inngest";
import { defineTool, type Harness } from "../../../../src/index.js";
import { run as runStep } from "../../../../src/inngest/index.js";
import type { EngineDriver } from "../engines.js";
import { ARGS, type World } from "../world.js";

/**
 * `run` in an Inngest function executed by `@inngest/test`: the triggering event's id is the run's identity, each
 * execution is a new worker, and a `NonRetriableError` is what Inngest would not retry.
 */
export const inngestDriver: EngineDriver = {
  name: "run (Inngest step)",
  cannot: {
    "run identity":
      "the row waits for the input the Inngest adapter keys a distinct run by (today: the triggering event id)",
  },
  async execute(world, { run }) {
    const harness = world.harness();
    const engine = new InngestTestEngine({
      function: chargeFunction(world, harness),
      events: [{ id: `evt-${world.taskId}-${run}`, name: "order/placed", data: {} }],
    });
    const output = await engine.execute();
    if (output.error === undefined) return { value: output.result };
    const error = output.error as { name?: string };
    return { error, retryable: error.name !== "NonRetriableError" };
  },
};

function chargeFunction(world: World, harness: Harness) {
  const tool = defineTool({
    name: world.spec.name,
    effect: world.spec.effect,
    run: (_args: object, ctx) => world.owner.act(ctx.idempotencyKey),
  });
  // Inngest logs every failed step; the table's failures are expected and checked, so they stay quiet.
  const quiet = (): void => {};
  const inngest = new Inngest({
    id: "contract",
    logger: { info: quiet, warn: quiet, error: quiet, debug: quiet },
  });
  return inngest.createFunction({ id: "charge", triggers: [{ event: "order/placed" }] }, async (ctx) =>
    runStep(ctx, harness, tool, ARGS),
  );
}
