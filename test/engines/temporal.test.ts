import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Context } from "@temporalio/activity";
import { ApplicationFailure } from "@temporalio/common";
import { MockActivityEnvironment } from "@temporalio/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, defineTool, idempotencyKey, OutcomeUnknownError } from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { activityIdentity, callTool } from "../../src/temporal/index.js";
import { charge, type Owner, startOwner } from "./owner.js";

/**
 * Temporal's server cannot run here (the test server and the dev server are binaries @temporalio/testing downloads
 * on first use), so these tests run the activities in the official MockActivityEnvironment and play the server's
 * part themselves: a failed attempt that the retry policy would retry is run again with the same workflow id and
 * activity id and the next attempt number, which is what the server schedules.
 */
const dir = mkdtempSync(join(tmpdir(), "idemkey-temporal-"));
let owner: Owner;
const drop = new Set<number>();
beforeAll(async () => {
  owner = await startOwner({
    effectsFile: join(dir, "effects.jsonl"),
    afterEffect: (n) => (drop.has(n) ? "drop" : undefined),
  });
});
afterAll(async () => {
  await owner.close();
  rmSync(dir, { recursive: true, force: true });
});

// A ledger in a file, shared by every "worker" below, as a fleet shares one database.
const harness = createHarness({ store: sqliteStore(join(dir, "ledger.db")), retry: { retries: 0 } });
const chargeTool = defineTool({
  name: "charge",
  effect: "keyed",
  run: (args: { amount: number }, ctx) => charge(owner.url, "/charges", args.amount, ctx.idempotencyKey),
});
const unguardedTool = defineTool({
  name: "chargeUnguarded",
  effect: "unguarded",
  run: (args: { amount: number }) => charge(owner.url, "/unguarded", args.amount, undefined),
});

// The activities, as an application would write them.
const chargeActivity = (amount: number) => callTool(harness, chargeTool, { amount });
const unguardedActivity = (amount: number) => callTool(harness, unguardedTool, { amount });
/** What Temporal users write without idemkey: a key from the run, the activity and the attempt. */
const handRolledActivity = (amount: number) => {
  const { workflowExecution, activityId, attempt } = Context.current().info;
  return charge(owner.url, "/charges", amount, `${workflowExecution?.runId}:${activityId}:${attempt}`);
};
const bareUnguardedActivity = (amount: number) => charge(owner.url, "/unguarded", amount, undefined);

let workflows = 0;
/**
 * Runs `activity` as attempt 1 with the owner losing its reply, then, if the failure is one the server retries,
 * as attempt 2 (in another run of the workflow when `newRun`, as after a workflow retry or reset).
 */
async function attemptTwice<R>(activity: (amount: number) => Promise<R>, amount: number, newRun = false) {
  const workflowId = `order-${++workflows}`;
  const before = owner.effects().length;
  drop.clear();
  drop.add(before + 1);
  const info = (attempt: number, runId: string) => ({
    workflowExecution: { workflowId, runId },
    activityId: "1",
    activityType: "charge",
    attempt,
  });
  const errors: unknown[] = [];
  let result: R | undefined;
  for (const [attempt, runId] of [
    [1, "run-a"],
    [2, newRun ? "run-b" : "run-a"],
  ] as const) {
    try {
      result = await new MockActivityEnvironment(info(attempt, runId)).run(activity, amount);
      break;
    } catch (error) {
      errors.push(error);
      if (error instanceof ApplicationFailure && error.nonRetryable) break; // the server would not retry
    }
  }
  return { workflowId, errors, result, effects: owner.effects().slice(before) };
}

describe("idemkey/temporal in MockActivityEnvironment", () => {
  it("an activity that took effect and lost its reply, retried as attempt 2: one effect under one key", async () => {
    const { workflowId, errors, result, effects } = await attemptTwice(chargeActivity, 900);
    const key = idempotencyKey(workflowId, "charge", { amount: 900 }, { step: "1" });
    expect(errors).toHaveLength(1);
    expect(errors[0]).not.toBeInstanceOf(ApplicationFailure); // a plain failure: the retry policy retries it
    expect(effects).toEqual([{ key, body: { amount: 900 } }]);
    expect(owner.requests.filter((r) => r.key === key)).toHaveLength(2);
    expect(result).toEqual({ id: expect.any(String), amount: 900 });
  });

  it("the same key in a new run of the workflow (a workflow retry or reset changes the run id): one effect", async () => {
    const { effects } = await attemptTwice(chargeActivity, 901, true);
    expect(effects).toHaveLength(1);
  });

  it("(without idemkey) a run:activity:attempt key changes on the retry: two effects", async () => {
    const { effects } = await attemptTwice(handRolledActivity, 902);
    expect(effects.map((e) => e.key)).toEqual(["run-a:1:1", "run-a:1:2"]);
  });

  it("an unguarded activity that may have taken effect fails with a non-retryable ApplicationFailure", async () => {
    const { errors, effects } = await attemptTwice(unguardedActivity, 903);
    expect(effects).toHaveLength(1);
    expect(errors).toHaveLength(1);
    const failure = errors[0] as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: "OutcomeUnknownError", nonRetryable: true });
    expect(failure.cause).toBeInstanceOf(OutcomeUnknownError);
    expect(failure.details).toEqual([{ key: (failure.cause as OutcomeUnknownError).key }]);
  });

  it("(without idemkey) the same unguarded activity is retried: two effects", async () => {
    const { effects, errors } = await attemptTwice(bareUnguardedActivity, 904);
    expect(errors).toHaveLength(1);
    expect(effects).toHaveLength(2);
  });

  it("activityIdentity(): the workflow id and the activity id, not the run id or the attempt", async () => {
    const env = new MockActivityEnvironment({
      workflowExecution: { workflowId: "order-x", runId: "run-z" },
      activityId: "7",
      attempt: 3,
    });
    expect(await env.run(async () => activityIdentity())).toEqual({ taskId: "order-x", step: "7" });
  });

  it("callTool outside an activity is a TypeError", async () => {
    await expect(callTool(harness, chargeTool, { amount: 1 })).rejects.toThrow(/inside a Temporal activity/);
  });
});
