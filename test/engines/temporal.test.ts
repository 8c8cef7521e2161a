import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Context } from "@temporalio/activity";
import { ApplicationFailure } from "@temporalio/common";
import { MockActivityEnvironment } from "@temporalio/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CanonicalizationError,
  createHarness,
  defineTool,
  idempotencyKey,
  OutcomeUnknownError,
} from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { activityIdentity, callTool } from "../../src/temporal/index.js";
import { charge, type Owner, startOwner } from "./owner.js";

/**
 * Temporal's server cannot run here (the test server and the dev server are binaries @temporalio/testing downloads
 * on first use), so these tests run the activities in the official MockActivityEnvironment and play the server's
 * part themselves: a failed attempt that the retry policy would retry is run again with the same workflow id, run
 * id and activity id and the next attempt number, which is what the server schedules; a new run (continue-as-new, a
 * cron run) keeps the workflow id and starts its activity ids at 1 again under a new run id.
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

/** Charges, then returns what JSON cannot hold: the ledger closes the key ("will not run again for this key"). */
let bigintRuns = 0;
const bigintTool = defineTool({
  name: "chargeBigint",
  effect: "keyed",
  run: async (args: { amount: number }, ctx) => {
    bigintRuns += 1;
    const receipt = await charge(owner.url, "/charges", args.amount, ctx.idempotencyKey);
    return { ...receipt, cents: BigInt(args.amount) };
  },
});

// The activities, as an application would write them.
const chargeActivity = (amount: number) => callTool(harness, chargeTool, { amount });
const unguardedActivity = (amount: number) => callTool(harness, unguardedTool, { amount });
const bigintActivity = (amount: number) => callTool(harness, bigintTool, { amount });
/** Grouped by the workflow id alone, as a user who wants every run of a workflow on one key writes it. */
const perWorkflowActivity = (amount: number) =>
  callTool(harness, chargeTool, { amount }, { taskId: (info) => info.workflowExecution?.workflowId ?? "" });
/** What Temporal users write without idemkey: a key from the run, the activity and the attempt. */
const handRolledActivity = (amount: number) => {
  const { workflowExecution, activityId, attempt } = Context.current().info;
  return charge(owner.url, "/charges", amount, `${workflowExecution?.runId}:${activityId}:${attempt}`);
};
const bareUnguardedActivity = (amount: number) => charge(owner.url, "/unguarded", amount, undefined);

/** Temporal's logger writes each failed attempt to stderr; these failures are the ones the tests expect. */
const silent = () => {};
const quiet = {
  logger: { log: silent, trace: silent, debug: silent, info: silent, warn: silent, error: silent },
};

let workflows = 0;
/** The activity Info the server sends for activity "1" of `runId` of `workflowId`. */
const infoOf = (workflowId: string, runId: string, attempt: number) => ({
  workflowExecution: { workflowId, runId },
  activityId: "1",
  activityType: "charge",
  attempt,
});

/**
 * Runs `activity` as attempt 1 with the owner losing its reply (unless `loseReply` is false), then, if the failure
 * is one the server retries, as attempt 2 of the same run.
 */
async function attemptTwice<R>(activity: (amount: number) => Promise<R>, amount: number, loseReply = true) {
  const workflowId = `order-${++workflows}`;
  const before = owner.effects().length;
  drop.clear();
  if (loseReply) drop.add(before + 1);
  const errors: unknown[] = [];
  let result: R | undefined;
  for (const attempt of [1, 2]) {
    try {
      result = await new MockActivityEnvironment(infoOf(workflowId, "run-a", attempt), quiet).run(
        activity,
        amount,
      );
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
    const key = idempotencyKey(`${workflowId}/run-a`, "charge", { amount: 900 }, { step: "1" });
    expect(errors).toHaveLength(1);
    expect(errors[0]).not.toBeInstanceOf(ApplicationFailure); // a plain failure: the retry policy retries it
    expect(effects).toEqual([{ key, body: { amount: 900 } }]);
    expect(owner.requests.filter((r) => r.key === key)).toHaveLength(2);
    expect(result).toEqual({ id: expect.any(String), amount: 900 });
  });

  it('continue-as-new and cron: activity "1" of three runs of one workflow id charges three times', async () => {
    // Months 1, 2 and 3 of a monthly charge: each run restarts its activity ids at 1 under the same workflow id.
    const workflowId = `monthly-${++workflows}`;
    const runs = ["run-jan", "run-feb", "run-mar"];
    const before = owner.effects().length;
    for (const runId of runs) {
      await new MockActivityEnvironment(infoOf(workflowId, runId, 1), quiet).run(chargeActivity, 905);
    }
    expect(owner.effects().slice(before)).toEqual(
      runs.map((runId) => ({
        key: idempotencyKey(`${workflowId}/${runId}`, "charge", { amount: 905 }, { step: "1" }),
        body: { amount: 905 },
      })),
    );
  });

  it("options.taskId groups runs as the user asks: the workflow id alone puts every run on one key", async () => {
    const workflowId = `grouped-${++workflows}`;
    const before = owner.effects().length;
    for (const runId of ["run-a", "run-b"]) {
      await new MockActivityEnvironment(infoOf(workflowId, runId, 1), quiet).run(perWorkflowActivity, 906);
    }
    expect(owner.effects().slice(before)).toEqual([
      { key: idempotencyKey(workflowId, "charge", { amount: 906 }, { step: "1" }), body: { amount: 906 } },
    ]);
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

  it("a keyed tool whose result is not JSON: one attempt, a non-retryable ApplicationFailure with the key", async () => {
    const runsBefore = bigintRuns;
    const { workflowId, errors, effects } = await attemptTwice(bigintActivity, 907, false);
    expect(bigintRuns - runsBefore).toBe(1);
    expect(effects).toHaveLength(1);
    expect(errors).toHaveLength(1);
    const failure = errors[0] as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: "CanonicalizationError", nonRetryable: true });
    expect(failure.cause).toBeInstanceOf(CanonicalizationError);
    const key = idempotencyKey(`${workflowId}/run-a`, "chargeBigint", { amount: 907 }, { step: "1" });
    expect(failure.details).toEqual([{ key }]);
  });

  it("activityIdentity(): the workflow id, the run id and the activity id, not the attempt", async () => {
    const env = new MockActivityEnvironment(
      {
        workflowExecution: { workflowId: "order-x", runId: "run-z" },
        activityId: "7",
        attempt: 3,
      },
      quiet,
    );
    expect(await env.run(async () => activityIdentity())).toEqual({ taskId: "order-x/run-z", step: "7" });
  });

  it("options.taskId: a function of the activity Info returning a non-empty string, else a TypeError", async () => {
    const env = new MockActivityEnvironment(infoOf("order-y", "run-y", 1), quiet);
    const call = (taskId: unknown) =>
      env.run(() => callTool(harness, chargeTool, { amount: 1 }, { taskId } as never));
    await expect(call("order-y")).rejects.toThrow(/options\.taskId must be a function/);
    await expect(call(() => "")).rejects.toThrow(/options\.taskId must return a non-empty string/);
    await expect(env.run(() => callTool(harness, chargeTool, { amount: 1 }, null as never))).rejects.toThrow(
      /options must be an object/,
    );
  });

  it("callTool outside an activity is a TypeError", async () => {
    await expect(callTool(harness, chargeTool, { amount: 1 })).rejects.toThrow(/inside a Temporal activity/);
  });
});
