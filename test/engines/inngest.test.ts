import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InngestTestEngine, mockCtx } from "@inngest/test";
import { Inngest } from "inngest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, defineTool, idempotencyKey } from "../../src/index.js";
import { run } from "../../src/inngest/index.js";
import { charge, type Owner, startOwner } from "./owner.js";

/**
 * Inngest's server (the Dev Server) is a binary the CLI downloads, so these tests run the functions in the official
 * @inngest/test engine. It does not retry a failed step on its own: the test executes the run again, as Inngest
 * re-invokes a function whose step failed (with every earlier step memoized). Unlike Inngest, the test engine draws
 * a new run id for each execution; the key does not use it.
 */
const dir = mkdtempSync(join(tmpdir(), "idemkey-inngest-"));
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

const harness = createHarness({ retry: { retries: 0 } });
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

/** Inngest logs every failed step to stderr; these failures are the ones the tests expect. */
const silent = () => {};
const quiet = { info: silent, warn: silent, error: silent, debug: silent };
const inngest = new Inngest({ id: "idemkey-test", logger: quiet, internalLogger: quiet });
const amountOf = (event: { data: unknown }) => (event.data as { amount: number }).amount;
const trigger = { triggers: [{ event: "order/placed" }] };
const withIdemkey = inngest.createFunction({ id: "with-idemkey", ...trigger }, async (ctx) =>
  run(ctx, harness, chargeTool, { amount: amountOf(ctx.event) }, { id: "charge" }),
);
const twice = inngest.createFunction({ id: "twice", ...trigger }, async ({ event, step }) => {
  const args = { amount: amountOf(event) };
  return [
    await run({ event, step }, harness, chargeTool, args),
    await run({ event, step }, harness, chargeTool, args),
  ];
});
/** What Inngest users write without idemkey: a key from the run id and the step, which the run keeps... */
const handRolled = inngest.createFunction({ id: "hand-rolled", ...trigger }, async ({ event, step, runId }) =>
  step.run("charge", () => charge(owner.url, "/charges", amountOf(event), `${runId}:charge`)),
);
/** ...or a fresh key inside the step, new on every attempt. */
const minted = inngest.createFunction({ id: "minted", ...trigger }, async ({ event, step }) =>
  step.run("charge", () => charge(owner.url, "/charges", amountOf(event), randomUUID())),
);
const unguarded = inngest.createFunction({ id: "unguarded", ...trigger }, async (ctx) =>
  run(ctx, harness, unguardedTool, { amount: amountOf(ctx.event) }),
);
const bigint = inngest.createFunction({ id: "bigint", ...trigger }, async (ctx) =>
  run(ctx, harness, bigintTool, { amount: amountOf(ctx.event) }),
);
const unguardedBare = inngest.createFunction({ id: "unguarded-bare", ...trigger }, async ({ event, step }) =>
  step.run("charge", () => charge(owner.url, "/unguarded", amountOf(event), undefined)),
);

/** Two cron functions on one schedule, charging the same amount: Inngest fires both with one tick's event id. */
const cronTrigger = { triggers: [{ cron: "0 9 1 * *" }] };
const monthlyA = inngest.createFunction({ id: "monthly-a", ...cronTrigger }, async (ctx) =>
  run(ctx, harness, chargeTool, { amount: 1200 }, { id: "charge" }),
);
const monthlyB = inngest.createFunction({ id: "monthly-b", ...cronTrigger }, async (ctx) =>
  run(ctx, harness, chargeTool, { amount: 1200 }, { id: "charge" }),
);
/** The event Inngest's scheduler sends for a cron tick: its id is the tick's time, the same for every function. */
const tick = (at: string) => ({ id: at, name: "inngest/scheduled.timer", data: { cron: "0 9 1 * *" } });

/**
 * Executes the run for one event with the owner losing the reply of its first effect, then, while the step
 * failed with an error Inngest retries, executes it again (up to 3 executions).
 */
async function executeWithRetry(fn: InngestTestEngine.Options["function"], amount: number, loseReply = true) {
  const event = { id: `evt-${randomUUID()}`, name: "order/placed", data: { amount } };
  const before = owner.effects().length;
  drop.clear();
  if (loseReply) drop.add(before + 1);
  const engine = new InngestTestEngine({ function: fn, events: [event] });
  const errors: { name?: string; message?: string }[] = [];
  let result: unknown;
  for (let execution = 1; execution <= 3; execution++) {
    const output = await engine.execute();
    if (output.error === undefined) {
      result = output.result;
      break;
    }
    const error = output.error as { name?: string; message?: string };
    errors.push(error);
    if (error.name === "NonRetriableError") break; // Inngest would not retry
  }
  return { eventId: event.id, errors, result, effects: owner.effects().slice(before) };
}

describe("idemkey/inngest in @inngest/test", () => {
  it("a step that took effect and lost its reply, executed again: one effect under one key", async () => {
    const { eventId, errors, result, effects } = await executeWithRetry(withIdemkey, 1000);
    const key = idempotencyKey(eventId, "charge", { amount: 1000 }, { step: "charge" });
    expect(errors).toHaveLength(1);
    expect(effects).toEqual([{ key, body: { amount: 1000 } }]);
    expect(owner.requests.filter((r) => r.key === key)).toHaveLength(2);
    expect(result).toEqual({ id: expect.any(String), amount: 1000 });
  });

  it("two steps with one id get the keys id and id#2", async () => {
    const { eventId, effects } = await executeWithRetry(twice, 1001);
    expect(effects.map((e) => e.key)).toEqual(
      ["charge", "charge#2"].map((step) => idempotencyKey(eventId, "charge", { amount: 1001 }, { step })),
    );
  });

  it("(without idemkey) a key minted inside the step is new on the retry: two effects", async () => {
    const { effects } = await executeWithRetry(minted, 1002);
    expect(effects).toHaveLength(2);
  });

  it("(without idemkey) a run-id key: the test engine's new run id per execution gives two effects", async () => {
    const { effects } = await executeWithRetry(handRolled, 1003);
    expect(effects).toHaveLength(2);
  });

  it("an unguarded step that may have taken effect fails with NonRetriableError: one effect", async () => {
    const { errors, effects } = await executeWithRetry(unguarded, 1004);
    expect(effects).toHaveLength(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      name: "NonRetriableError",
      message: expect.stringContaining("is unknown"),
    });
  });

  it("(without idemkey) the same unguarded step executed again: two effects", async () => {
    const { effects } = await executeWithRetry(unguardedBare, 1005);
    expect(effects).toHaveLength(2);
  });

  it("a keyed tool whose result is not JSON: one execution, NonRetriableError with the cause and the key", async () => {
    const runsBefore = bigintRuns;
    const { eventId, errors, effects } = await executeWithRetry(bigint, 1006, false);
    expect(bigintRuns - runsBefore).toBe(1);
    expect(effects).toHaveLength(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      name: "NonRetriableError",
      message: expect.stringContaining("is not a JSON value"),
    });
    const cause = (errors[0] as { cause?: { name?: string } }).cause;
    expect(cause?.name).toBe("CanonicalizationError");
    const key = idempotencyKey(eventId, "chargeBigint", { amount: 1006 }, { step: "chargeBigint" });
    expect(errors[0]?.message).toContain(key);
  });

  it("cron: two functions fired by one tick (one event id) are two runs, two effects", async () => {
    const before = owner.effects().length;
    drop.clear();
    const event = tick("2026-12-01T09:00:00Z");
    for (const fn of [monthlyA, monthlyB]) {
      const output = await new InngestTestEngine({ function: fn, events: [event] }).execute();
      expect(output.error).toBeUndefined();
    }
    const effects = owner.effects().slice(before);
    expect(effects).toHaveLength(2);
    expect(new Set(effects.map((e) => e.key)).size).toBe(2);
  });

  it("cron: a step retried within one run of a tick keeps its key (the run id): one effect", async () => {
    const before = owner.effects().length;
    drop.clear();
    drop.add(before + 1);
    const event = tick("2026-11-01T09:00:00Z");
    // Inngest executes the run again with the same run id; the test engine draws a new one unless told.
    const engine = new InngestTestEngine({
      function: monthlyA,
      events: [event],
      transformCtx: (ctx) => ({ ...mockCtx(ctx), runId: "run-nov" }),
    });
    const first = await engine.execute();
    expect(first.error).toBeDefined();
    const second = await engine.execute();
    expect(second.error).toBeUndefined();
    expect(owner.effects().slice(before)).toEqual([
      {
        key: idempotencyKey(`${event.id}/run-nov`, "charge", { amount: 1200 }, { step: "charge" }),
        body: { amount: 1200 },
      },
    ]);
  });

  it("an event without an id is a TypeError asking for options.taskId", async () => {
    const fn = inngest.createFunction({ id: "no-id", ...trigger }, async (ctx) =>
      run({ ...ctx, event: { ...ctx.event, id: undefined } }, harness, chargeTool, { amount: 1 }),
    );
    const output = await new InngestTestEngine({
      function: fn,
      events: [{ name: "order/placed", data: {} }],
    }).execute();
    expect(output.error).toMatchObject({ message: expect.stringContaining("options.taskId") });
  });
});
