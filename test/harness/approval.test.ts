import { describe, expect, it } from "vitest";
import {
  ApprovalDeniedError,
  CanonicalizationError,
  createHarness,
  defineTool,
  type HarnessOptions,
  LedgerStateError,
  memoryStore,
  OutcomeUnknownError,
  WaitTimeoutError,
} from "../../src/index.js";
import { eventLog, fakeOwner, fakeTime, flush } from "./support.js";

function setup(options: HarnessOptions = {}) {
  const time = fakeTime();
  const store = memoryStore({ clock: time.clock });
  const owner = fakeOwner();
  const log = eventLog();
  const harness = createHarness({
    store,
    clock: time.clock,
    sleep: time.sleep,
    onEvent: log.onEvent,
    ...options,
  });
  return { time, store, owner, log, harness };
}

type Transfer = { to: string; cents: number; memo?: string };

function transferTool(owner: ReturnType<typeof fakeOwner>, identity?: (args: Transfer) => unknown) {
  return defineTool({
    name: "transfer",
    effect: "keyed",
    requiresApproval: true,
    ...(identity ? { identity } : {}),
    run: (args: Transfer, ctx) => owner.keyed(ctx.idempotencyKey, args),
  });
}

describe("approval", () => {
  it("parks the call until approved, then runs it once; the audit trail says who and when", async () => {
    const { time, owner, log, harness } = setup();
    const tool = transferTool(owner);
    const args = { to: "acct-1", cents: 500 };
    const key = harness.key("t", tool, args);
    const parked = harness.call("t", tool, args);
    await flush();
    expect(owner.requests).toHaveLength(0);
    const entry = await harness.get(key);
    expect(entry).toMatchObject({
      state: "awaiting_approval",
      args,
      events: [{ type: "approval_requested" }],
    });
    await time.advance(60_000);
    expect(owner.requests).toHaveLength(0);
    const approvedAt = time.clock();
    expect((await harness.approve(key, { by: "ana" })).state).toBe("approved");
    expect(await time.run(parked)).toEqual({ id: 1 });
    expect(owner.effects).toEqual([{ key, args }]);
    expect(log.types()).toEqual(["approval_requested", "approved", "waited", "executed"]);
    expect(log.events[1]).toMatchObject({ type: "approved", by: "ana", key, taskId: "t", tool: "transfer" });
    expect((await harness.get(key))?.events).toEqual([
      { type: "approval_requested", at: approvedAt - 60_000 },
      { type: "approved", at: approvedAt, by: "ana" },
    ]);
    // Completed: later calls replay without asking again.
    expect(await harness.call("t", tool, args)).toEqual({ id: 1 });
    expect(owner.requests).toHaveLength(1);
  });

  it("is bound to the exact key: approving one call never approves another with other arguments", async () => {
    const { time, owner, harness } = setup({ approvalTimeoutMs: 10_000 });
    const tool = transferTool(owner);
    const small = harness.call("t", tool, { to: "acct-1", cents: 5 });
    const large = harness.call("t", tool, { to: "acct-1", cents: 500_000 }).catch((e: unknown) => e);
    await flush();
    await harness.approve(harness.key("t", tool, { to: "acct-1", cents: 5 }));
    expect(await time.run(small)).toEqual({ id: 1 });
    const error = await time.run(large);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toMatchObject({ state: "awaiting_approval" });
    expect(owner.requests.map((r) => r.args)).toEqual([{ to: "acct-1", cents: 5 }]);
  });

  it("with an identity, runs exactly the approved arguments, even for a re-worded caller", async () => {
    const { time, owner, harness } = setup({ approvalTimeoutMs: 1_000 });
    const tool = transferTool(owner, (args) => ({ to: args.to, cents: args.cents }));
    const approvedArgs = { to: "acct-1", cents: 5, memo: "rent" };
    const key = harness.key("t", tool, approvedArgs);
    await expect(time.run(harness.call("t", tool, approvedArgs))).rejects.toBeInstanceOf(WaitTimeoutError);
    await harness.approve(key);
    const result = await time.run(harness.call("t", tool, { to: "acct-1", cents: 5, memo: "RENT!!" }));
    expect(result).toEqual({ id: 1 });
    expect(owner.requests.map((r) => r.args)).toEqual([approvedArgs]);
  });

  it("a parked call that timed out is picked up by a later call once approved", async () => {
    const { time, owner, harness } = setup({ approvalTimeoutMs: 5_000 });
    const tool = transferTool(owner);
    const args = { to: "acct-1", cents: 5 };
    await expect(time.run(harness.call("t", tool, args))).rejects.toBeInstanceOf(WaitTimeoutError);
    await time.advance(3_600_000);
    await harness.approve(harness.key("t", tool, args), { by: "bo" });
    expect(await time.run(harness.call("t", tool, args))).toEqual({ id: 1 });
  });

  it("deny: the parked call and every later one with the key throw ApprovalDeniedError; nothing runs", async () => {
    const { time, owner, log, harness } = setup();
    const tool = transferTool(owner);
    const args = { to: "acct-9", cents: 9_999 };
    const key = harness.key("t", tool, args);
    const parked = harness.call("t", tool, args).catch((e: unknown) => e);
    await flush();
    const entry = await harness.deny(key, "unknown account", { by: "ana" });
    expect(entry.state).toBe("denied");
    const error = await time.run(parked);
    expect(error).toBeInstanceOf(ApprovalDeniedError);
    expect(error).toMatchObject({ key, reason: "unknown account", by: "ana" });
    await expect(harness.call("t", tool, args)).rejects.toBeInstanceOf(ApprovalDeniedError);
    expect(owner.requests).toHaveLength(0);
    expect(log.types()).toContain("denied");
    expect((await harness.get(key))?.events.at(-1)).toMatchObject({
      type: "denied",
      by: "ana",
      reason: "unknown account",
    });
  });

  it("an approved call whose final attempt failed stays approved: a later call runs without asking again", async () => {
    const { time, store, harness } = setup({ retry: { retries: 0 } });
    let fail = true;
    const runs: string[] = [];
    const tool = defineTool({
      name: "wire",
      effect: "keyed",
      requiresApproval: true,
      run: (_: object, ctx) => {
        runs.push(ctx.idempotencyKey);
        if (fail) throw new Error("bank offline");
        return "sent";
      },
    });
    const key = harness.key("t", tool, {});
    const parked = harness.call("t", tool, {}).catch((e: unknown) => e);
    await flush();
    await harness.approve(key);
    expect(await time.run(parked)).toMatchObject({ message: "bank offline" });
    expect((await store.get(`call:${key}`))?.state).toBe("approved");
    fail = false;
    expect(await time.run(harness.call("t", tool, {}))).toBe("sent");
    expect(runs).toEqual([key, key]);
  });

  it("approve and deny refuse a record in another state, naming it", async () => {
    const { owner, harness } = setup();
    const plain = defineTool({
      name: "plain",
      effect: "keyed",
      run: (_: object, ctx) => owner.keyed(ctx.idempotencyKey, {}),
    });
    await harness.call("t", plain, {});
    const key = harness.key("t", plain, {});
    const error = await harness.approve(key).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LedgerStateError);
    expect(error).toMatchObject({ key, state: "completed" });
    await expect(harness.deny("0".repeat(64), "no")).rejects.toMatchObject({ state: undefined });
    await expect(harness.deny(key, "")).rejects.toBeInstanceOf(TypeError);
  });
});

describe("resolve (outcome unknown)", () => {
  function unknownCall() {
    const ctx = setup();
    const tool = defineTool({
      name: "post",
      effect: "unguarded",
      run: (args: { text: string }, c) => {
        ctx.owner.unguarded(c.idempotencyKey, args);
        if (args.text !== "ok") throw new Error("timeout");
        return { posted: true };
      },
    });
    return { ...ctx, tool };
  }

  it("{ result } records what happened; later calls replay it", async () => {
    const { owner, log, harness, tool } = unknownCall();
    const error = (await harness
      .call("t", tool, { text: "x" })
      .catch((e: unknown) => e)) as OutcomeUnknownError;
    const entry = await harness.resolve(error.key, { result: { id: "tw-1" } }, { by: "ops" });
    expect(entry).toMatchObject({ state: "completed", result: { id: "tw-1" } });
    expect(entry.events.map((e) => e.type)).toEqual(["outcome_unknown", "resolved"]);
    expect(entry.events[1]).toMatchObject({ how: "result", by: "ops" });
    expect(await harness.call("t", tool, { text: "x" })).toEqual({ id: "tw-1" });
    expect(owner.requests).toHaveLength(1);
    expect(log.types()).toEqual(["outcome_unknown", "resolved", "replayed"]);
  });

  it("{ retry: true } lets the next call run it again", async () => {
    const { owner, harness, tool } = unknownCall();
    const error = (await harness
      .call("t", tool, { text: "x" })
      .catch((e: unknown) => e)) as OutcomeUnknownError;
    await harness.resolve(error.key, { retry: true });
    await expect(harness.call("t", tool, { text: "x" })).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(owner.requests).toHaveLength(2);
  });

  it("checks the result before writing, and refuses a record whose outcome is known", async () => {
    const { harness, tool } = unknownCall();
    const error = (await harness
      .call("t", tool, { text: "x" })
      .catch((e: unknown) => e)) as OutcomeUnknownError;
    await expect(harness.resolve(error.key, { result: { at: Number.NaN } })).rejects.toBeInstanceOf(
      CanonicalizationError,
    );
    expect((await harness.get(error.key))?.state).toBe("outcome_unknown");
    await expect(harness.resolve(error.key, {} as never)).rejects.toBeInstanceOf(TypeError);
    await expect(harness.resolve(error.key, { retry: false } as never)).rejects.toBeInstanceOf(TypeError);
    await harness.call("t", tool, { text: "ok" });
    const ok = harness.key("t", tool, { text: "ok" });
    await expect(harness.resolve(ok, { result: 1 })).rejects.toMatchObject({
      name: "LedgerStateError",
      state: "completed",
    });
  });
});

describe("ledger listing, expiry and purge", () => {
  it("lists entries by state", async () => {
    const { owner, harness } = setup();
    const tool = defineTool({
      name: "n",
      effect: "keyed",
      run: (a: { n: number }, c) => owner.keyed(c.idempotencyKey, a),
    });
    for (const n of [1, 2, 3]) await harness.call("t", tool, { n });
    const all = await harness.list();
    expect(all.map((e) => e.args).sort((a, b) => (a as { n: number }).n - (b as { n: number }).n)).toEqual([
      { n: 1 },
      { n: 2 },
      { n: 3 },
    ]);
    expect(await harness.list({ state: "awaiting_approval" })).toEqual([]);
    const page = await harness.list({ limit: 2 });
    expect(page).toHaveLength(2);
    expect(await harness.list({ after: page[1]!.key })).toHaveLength(1);
  });

  it("ignores records older than ttlMs (the call runs again) and purges them in batches", async () => {
    const { time, store, owner } = setup();
    const harness = createHarness({ store, clock: time.clock, sleep: time.sleep, ttlMs: 60_000 });
    const tool = defineTool({
      name: "n",
      effect: "keyed",
      run: (a: { n: number }, c) => owner.unguarded(c.idempotencyKey, a),
    });
    for (const n of [1, 2, 3]) await harness.call("t", tool, { n });
    await time.advance(59_999);
    await harness.call("t", tool, { n: 1 });
    expect(owner.effects).toHaveLength(3);
    await time.advance(1);
    expect(await harness.get(harness.key("t", tool, { n: 2 }))).toBeUndefined();
    await harness.call("t", tool, { n: 1 });
    expect(owner.effects).toHaveLength(4);
    expect(await harness.purge({ limit: 1 })).toBe(1);
    expect(await harness.purge({ limit: 10 })).toBe(1);
    expect(await harness.purge()).toBe(0);
    await expect(harness.purge({ limit: 0 })).rejects.toBeInstanceOf(TypeError);
  });
});
