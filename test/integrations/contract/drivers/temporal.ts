import { ApplicationFailure, type Logger } from "@temporalio/common";
import { MockActivityEnvironment } from "@temporalio/testing";
import { defineTool } from "../../../../src/index.js";
import { callTool } from "../../../../src/temporal/index.js";
import type { EngineDriver } from "../engines.js";
import { ARGS } from "../world.js";

// The environment logs every failed attempt; the table's failures are expected and checked, so they stay quiet.
const quiet = (): void => {};
const logger: Logger = { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet };

/**
 * `callTool` in an activity run by Temporal's `MockActivityEnvironment`, the test playing the server: it schedules
 * the next attempt, and a non-retryable `ApplicationFailure` is what it would not retry. The execution's run is the
 * workflow's run id, which `callTool` keys by (`<workflowId>/<runId>`): a continue-as-new run has a new one.
 */
export const temporalDriver: EngineDriver = {
  name: "callTool (Temporal activity)",
  async execute(world, { run, attempt }) {
    const harness = world.harness();
    const tool = defineTool({
      name: world.spec.name,
      effect: world.spec.effect,
      run: (_args: object, ctx) => world.owner.act(ctx.idempotencyKey),
    });
    const environment = new MockActivityEnvironment(
      {
        workflowExecution: { workflowId: `wf-${world.taskId}`, runId: run },
        activityId: "1",
        activityType: "charge",
        attempt,
      },
      { logger },
    );
    try {
      return { value: await environment.run(() => callTool(harness, tool, ARGS)) };
    } catch (error) {
      return { error, retryable: !(error instanceof ApplicationFailure && error.nonRetryable) };
    }
  },
};
