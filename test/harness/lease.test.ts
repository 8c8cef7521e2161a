import { describe, expect, it, vi } from "vitest";
import {
  createHarness,
  defineTool,
  type HarnessEvent,
  type HarnessOptions,
  memoryStore,
  OutcomeUnknownError,
  type ReconcileResult,
  type Store,
  WaitTimeoutError,
} from "../../src/index.js";
import { eventLog, fakeOwner, fakeTime, flush } from "./support.js";

const never = new Promise<never>(() => {});

function setup(options: HarnessOptions = {}) {
  const time = fakeTime();
  const store = memoryStore({ clock: time.clock });
  const owner = fakeOwner();
  const make = (extra: HarnessOptions = {}) => {
    const log = eventLog();
    const harness = createHarness({
      store,
      clock: time.clock,
      sleep: time.sleep,
      leaseMs: 3_000,
      onEvent: log.onEvent,
      ...options,
      ...extra,
    });
    return { harness, log };
  };
  /** A harness in a process that has stopped dead: it never wakes up again, so it never renews its lease. */
  const dead = () => createHarness({ store, clock: time.clock, sleep: () => never, leaseMs: 3_000 });
  return { time, store, owner, make, dead };
}

describe("waiting across harnesses (processes) on one store", () => {
  it("the loser waits for the winner and returns its result; the tool runs once", async () => {
    const { time, owner, make } = setup();
    const tool = defineTool({
      name: "deploy",
      effect: "keyed",
      run: async (args: { v: number }, ctx) => {
        await time.sleep(5_000);
        return owner.unguarded(ctx.idempotencyKey, args);
      },
    });
    const a = make();
    const b = make();
    const first = a.harness.call("t", tool, { v: 1 });
    await flush();
    const second = b.harness.call("t", tool, { v: 1 });
    expect(await time.run(Promise.all([first, second]))).toEqual([{ id: 1 }, { id: 1 }]);
    expect(owner.effects).toHaveLength(1);
    expect(b.log.types()).toEqual(["waited", "replayed"]);
    expect(b.log.events[0]).toMatchObject({ type: "waited", on: "pending", tool: "deploy" });
  });

  it("the harness renews the lease while a long tool runs, so nobody takes it over", async () => {
    const { time, store, owner, make } = setup({ wait: { timeoutMs: 600_000 } });
    const leases: number[] = [];
    const tool = defineTool({
      name: "migrate",
      effect: "keyed",
      run: async (args: object, ctx) => {
        for (let i = 0; i < 4; i++) {
          await time.sleep(5_000);
          leases.push((await store.get(`call:${ctx.idempotencyKey}`))!.leaseUntil! - time.clock());
        }
        return owner.unguarded(ctx.idempotencyKey, args);
      },
    });
    const a = make();
    const b = make();
    const first = a.harness.call("t", tool, {});
    await flush();
    const second = b.harness.call("t", tool, {});
    await time.run(Promise.all([first, second]));
    // 20 s of work on a 3 s lease: only renewal kept the claim alive (each look finds it in the future).
    expect(leases.every((ms) => ms > 0)).toBe(true);
    expect(owner.effects).toHaveLength(1);
    expect(b.log.types()).not.toContain("taken_over");
  });

  it("renews on the default timers too (setTimeout and Date.now, faked here)", async () => {
    vi.useFakeTimers();
    try {
      const store = memoryStore();
      const owner = fakeOwner();
      const tool = defineTool({
        name: "build",
        effect: "keyed",
        run: async (args: object, ctx) => {
          await new Promise((resolve) => setTimeout(resolve, 20_000));
          return owner.unguarded(ctx.idempotencyKey, args);
        },
      });
      const first = createHarness({ store, leaseMs: 3_000 }).call("t", tool, {});
      await vi.advanceTimersByTimeAsync(1);
      const second = createHarness({ store, leaseMs: 3_000 }).call("t", tool, {});
      await vi.advanceTimersByTimeAsync(30_000);
      expect(await Promise.all([first, second])).toEqual([{ id: 1 }, { id: 1 }]);
      expect(owner.effects).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a waiter whose clock runs ahead of the store's pauses between claims instead of spinning", async () => {
    const { time, store, owner, make } = setup();
    const tool = defineTool({
      name: "deploy",
      effect: "keyed",
      run: async (args: object, ctx) => {
        await time.sleep(5_000);
        return owner.unguarded(ctx.idempotencyKey, args);
      },
    });
    let claims = 0;
    const counted: Store = {
      ...store,
      claim: (key, input) => {
        claims++;
        return store.claim(key, input);
      },
    };
    const first = make().harness.call("t", tool, {});
    await flush();
    const ahead = make({ store: counted, clock: () => time.clock() + 60_000 });
    expect(await time.run(Promise.all([first, ahead.harness.call("t", tool, {})]))).toEqual([
      { id: 1 },
      { id: 1 },
    ]);
    expect(owner.effects).toHaveLength(1);
    // One claim per pause at most: about log2(5 s / 25 ms) plus the 1 s pauses, far from a spin.
    expect(claims).toBeLessThan(20);
  });

  it("a waiter's signal stops its wait; the running call goes on", async () => {
    const { time, owner, make } = setup();
    const tool = defineTool({
      name: "deploy",
      effect: "keyed",
      run: async (args: object, ctx) => {
        await time.sleep(5_000);
        return owner.unguarded(ctx.idempotencyKey, args);
      },
    });
    const first = make().harness.call("t", tool, {});
    await flush();
    const controller = new AbortController();
    const waiter = make()
      .harness.call("t", tool, {}, { signal: controller.signal })
      .catch((e: unknown) => e);
    await time.advance(1_000);
    controller.abort(new Error("user left"));
    expect(await waiter).toMatchObject({ message: "user left" });
    expect(await time.run(first)).toEqual({ id: 1 });
    expect(owner.effects).toHaveLength(1);
  });

  it("throws WaitTimeoutError after wait.timeoutMs, without running anything", async () => {
    const { time, owner, make } = setup({ wait: { timeoutMs: 5_000 } });
    const tool = defineTool({
      name: "slow",
      effect: "keyed",
      run: async (args: object, ctx) => {
        await time.sleep(60_000);
        return owner.unguarded(ctx.idempotencyKey, args);
      },
    });
    const first = make().harness.call("t", tool, {});
    await flush();
    const error = await time.run(
      make()
        .harness.call("t", tool, {})
        .catch((e: unknown) => e),
    );
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toMatchObject({ state: "pending", waitedMs: 5_000 });
    await time.run(first);
    expect(owner.effects).toHaveLength(1);
  });
});

describe("takeover of a claim whose process stopped", () => {
  /** Starts a call in a dead process: it runs the tool up to the hang and never finishes or renews. */
  async function crash<A>(
    dead: ReturnType<typeof createHarness>,
    tool: Parameters<typeof dead.call<A, unknown>>[1],
    args: A,
  ) {
    void dead.call("t", tool, args).catch(() => {});
    await flush();
  }

  function tools(
    owner: ReturnType<typeof fakeOwner>,
    effect: "keyed" | "unguarded" | "idempotent",
    hang: { on: boolean },
  ) {
    return defineTool({
      name: "create",
      effect,
      run: async (args: { n: number }, ctx) => {
        const result =
          effect === "keyed"
            ? owner.keyed(ctx.idempotencyKey, args)
            : owner.unguarded(ctx.idempotencyKey, args);
        if (hang.on) await never;
        return result;
      },
    });
  }

  it("keyed: runs again with the identical key once the lease expired; the owner dedupes", async () => {
    const { time, owner, make, dead } = setup();
    const hang = { on: true };
    const tool = tools(owner, "keyed", hang);
    await crash(dead(), tool, { n: 1 });
    hang.on = false;
    const { harness, log } = make();
    const result = await time.run(harness.call("t", tool, { n: 1 }));
    expect(result).toEqual({ id: 1 });
    expect(owner.requests).toHaveLength(2);
    expect(owner.requests[1]!.key).toBe(owner.requests[0]!.key);
    expect(owner.effects).toHaveLength(1);
    expect(log.types()).toEqual(["waited", "taken_over", "executed"]);
    expect(log.events[1]).toMatchObject({ type: "taken_over", attempt: 2, previousAttempts: 0 });
    // The audit trail keeps the takeover, for an inspector that was not watching when it happened.
    const entry = await harness.get(owner.requests[0]!.key);
    expect(entry?.state).toBe("completed");
    expect(entry?.events).toEqual([{ type: "taken_over", at: expect.any(Number), previousAttempts: 0 }]);
  });

  it("idempotent: runs again as well", async () => {
    const { time, owner, make, dead } = setup();
    const hang = { on: true };
    const tool = tools(owner, "idempotent", hang);
    await crash(dead(), tool, { n: 1 });
    hang.on = false;
    await time.run(make().harness.call("t", tool, { n: 1 }));
    expect(owner.requests).toHaveLength(2);
  });

  it("unguarded: never runs again; OutcomeUnknownError with the key, recorded in the ledger", async () => {
    const { time, owner, make, dead } = setup();
    const hang = { on: true };
    const tool = tools(owner, "unguarded", hang);
    await crash(dead(), tool, { n: 1 });
    hang.on = false;
    const { harness, log } = make();
    const error = await time.run(harness.call("t", tool, { n: 1 }).catch((e: unknown) => e));
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as OutcomeUnknownError).key).toBe(owner.requests[0]!.key);
    expect(owner.requests).toHaveLength(1);
    expect(log.types()).toEqual(["waited", "taken_over", "outcome_unknown"]);
    const entry = await harness.get(owner.requests[0]!.key);
    expect(entry?.state).toBe("outcome_unknown");
    expect(entry?.events.at(-1)).toMatchObject({
      type: "outcome_unknown",
      error: expect.stringMatching(/stopped/),
    });
  });

  it("unguarded: a claim whose process died before the attempt started is run by the taker", async () => {
    const { time, store, owner, make } = setup();
    const tool = tools(owner, "unguarded", { on: false });
    // This process claims, then stops for good in the write that marks the attempt started.
    const frozenStore: Store = { ...store, update: () => never };
    void createHarness({ store: frozenStore, clock: time.clock, sleep: () => never, leaseMs: 3_000 })
      .call("t", tool, { n: 1 })
      .catch(() => {});
    await flush();
    expect((await store.list())[0]).toMatchObject({ state: "pending", attempts: 0 });
    const { harness, log } = make();
    expect(await time.run(harness.call("t", tool, { n: 1 }))).toEqual({ id: 1 });
    expect(owner.effects).toHaveLength(1);
    expect(log.events.find((e) => e.type === "taken_over")).toMatchObject({
      attempt: 1,
      previousAttempts: 0,
    });
  });

  it("a re-worded call with the same identity takes over and runs the recorded arguments", async () => {
    const { time, owner, make, dead } = setup();
    let hang = true;
    const tool = defineTool({
      name: "openPr",
      effect: "keyed",
      identity: (args: { head: string; title: string }) => ({ head: args.head }),
      run: async (args: { head: string; title: string }, ctx) => {
        const result = owner.keyed(ctx.idempotencyKey, args);
        if (hang) await never;
        return result;
      },
    });
    await crash(dead(), tool, { head: "h", title: "First wording" });
    hang = false;
    const { harness, log } = make();
    await time.run(harness.call("t", tool, { head: "h", title: "Second wording" }));
    expect(owner.requests.map((r) => r.args)).toEqual([
      { head: "h", title: "First wording" },
      { head: "h", title: "First wording" },
    ]);
    expect(log.events.at(-1)).toMatchObject({ type: "executed", argsDiffer: true });
  });
});

describe("reconcile (unguarded)", () => {
  function reconciled(
    owner: ReturnType<typeof fakeOwner>,
    answer: () => "look" | "unknown",
    behaviour: { hang?: boolean; fail?: boolean },
  ) {
    const checks: number[] = [];
    const tool = defineTool({
      name: "sendEmail",
      effect: "unguarded",
      run: async (args: { to: string }, ctx) => {
        const result = owner.unguarded(ctx.idempotencyKey, args);
        if (behaviour.hang) await never;
        if (behaviour.fail) throw new Error("connection reset");
        return result;
      },
      reconcile: (_args, ctx): ReconcileResult<{ id: number }> => {
        checks.push(ctx.attempt);
        if (answer() === "unknown") return undefined;
        const sent = owner.effects.findIndex((e) => e.key === ctx.idempotencyKey);
        return sent >= 0 ? { status: "done", result: { id: sent + 1 } } : { status: "not_done" };
      },
    });
    return { tool, checks };
  }

  it("after a takeover: done records the found result without running again", async () => {
    const { time, owner, make, dead } = setup();
    const behaviour = { hang: true };
    const { tool, checks } = reconciled(owner, () => "look", behaviour);
    await crash(dead(), tool);
    behaviour.hang = false;
    const { harness, log } = make();
    expect(await time.run(harness.call("t", tool, { to: "a@b" }))).toEqual({ id: 1 });
    expect(owner.requests).toHaveLength(1);
    expect(checks).toEqual([2]);
    expect(log.types()).toEqual(["waited", "taken_over", "resolved"]);
    expect(await make().harness.call("t", tool, { to: "a@b" })).toEqual({ id: 1 });
    expect((await harness.get(owner.requests[0]!.key))?.events).toEqual([
      { type: "taken_over", at: expect.any(Number), previousAttempts: 1 },
      { type: "resolved", at: expect.any(Number), how: "reconcile" },
    ]);
  });

  it("after a takeover: not_done lets the call run", async () => {
    const { time, owner, make, dead, store } = setup();
    const { tool } = reconciled(owner, () => "look", {});
    // The dead process claimed the key but never got to send anything.
    const frozen = dead();
    const blocked = defineTool({
      name: "sendEmail",
      effect: "unguarded",
      run: () => never as Promise<{ id: number }>,
    });
    void frozen.call("t", blocked, { to: "a@b" });
    await flush();
    expect((await store.list())[0]?.state).toBe("pending");
    expect(await time.run(make().harness.call("t", tool, { to: "a@b" }))).toEqual({ id: 1 });
    expect(owner.effects).toHaveLength(1);
  });

  it("after an ambiguous failure in this process: done returns the result", async () => {
    const { time, owner, make } = setup();
    const { tool } = reconciled(owner, () => "look", { fail: true });
    const { harness, log } = make();
    expect(await time.run(harness.call("t", tool, { to: "a@b" }))).toEqual({ id: 1 });
    expect(owner.effects).toHaveLength(1);
    expect(log.types()).toEqual(["resolved"]);
  });

  it("when it cannot tell, the outcome stays unknown, and each later call asks again", async () => {
    const { time, owner, make } = setup();
    let answer: "look" | "unknown" = "unknown";
    const { tool, checks } = reconciled(owner, () => answer, { fail: true });
    const { harness } = make();
    await expect(time.run(harness.call("t", tool, { to: "a@b" }))).rejects.toBeInstanceOf(
      OutcomeUnknownError,
    );
    await expect(time.run(harness.call("t", tool, { to: "a@b" }))).rejects.toBeInstanceOf(
      OutcomeUnknownError,
    );
    answer = "look";
    expect(await time.run(harness.call("t", tool, { to: "a@b" }))).toEqual({ id: 1 });
    expect(checks).toHaveLength(3);
    expect(owner.requests).toHaveLength(1);
  });

  async function crash(dead: ReturnType<typeof createHarness>, tool: ReturnType<typeof reconciled>["tool"]) {
    void dead.call("t", tool, { to: "a@b" }).catch(() => {});
    await flush();
  }
});

describe("a worker that stalled past its lease", () => {
  /** A harness whose lease renewals never come (its event loop stalled), sharing the store and clock. */
  function stalled(
    store: Store,
    clock: () => number,
    sleep: (ms: number) => Promise<void>,
    onEvent?: (event: HarnessEvent) => void,
  ) {
    return createHarness({
      store,
      clock,
      sleep: (ms) => (ms === 1_000 ? never : sleep(ms)) as Promise<void>,
      leaseMs: 3_000,
      ...(onEvent === undefined ? {} : { onEvent }),
    });
  }

  it("unguarded: the late result resolves the outcome the taker found unknown", async () => {
    const { time, store, owner, make } = setup();
    let stall = true;
    const tool = defineTool({
      name: "post",
      effect: "unguarded",
      run: async (args: object, ctx) => {
        if (stall) await time.sleep(10_000);
        return owner.unguarded(ctx.idempotencyKey, args);
      },
    });
    const heard: HarnessEvent[] = [];
    const slow = stalled(store, time.clock, time.sleep, (event) => heard.push(event)).call("t", tool, {});
    await flush();
    stall = false;
    const { harness } = make();
    await expect(time.run(harness.call("t", tool, {}))).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(await time.run(slow)).toEqual({ id: 1 });
    // The stalled worker's own events say that its result was recorded after all, and that it resolved the unknown
    // outcome: the resolution counters see a late completion as they see one by a person or a reconciler.
    expect(heard.filter((e) => e.type === "executed" || e.type === "resolved")).toEqual([
      expect.objectContaining({ type: "executed", recorded: true }),
      expect.objectContaining({ type: "resolved", how: "late_completion", by: undefined }),
    ]);
    expect(await harness.call("t", tool, {})).toEqual({ id: 1 });
    expect(owner.effects).toHaveLength(1);
    const key = owner.requests[0]!.key;
    expect((await harness.get(key))?.events.map((e) => e.type)).toEqual([
      "taken_over",
      "outcome_unknown",
      "resolved",
    ]);
  });
  it("keyed, a result that is not JSON: the completion landing over an unknown outcome is said as resolved, as for JSON", async () => {
    const { time, store, owner } = setup();
    let stalling!: () => void;
    const started = new Promise<void>((resolve) => {
      stalling = resolve;
    });
    const tool = defineTool({
      name: "refund",
      effect: "keyed",
      run: async (args: object, ctx) => {
        owner.keyed(ctx.idempotencyKey, args);
        stalling();
        await time.sleep(10_000);
        return { cents: 4_999n };
      },
    });
    const heard: HarnessEvent[] = [];
    const slow = stalled(store, time.clock, time.sleep, (event) => heard.push(event));
    const call = slow.call("t", tool, {});
    call.catch(() => {});
    await started;
    // Meanwhile its lease lapsed and the record was left unknown (as the reconciler leaves a stopped call's).
    const sk = `call:${slow.key("t", tool, {})}`;
    expect(
      await store.update(sk, { state: "pending" }, { state: "outcome_unknown", token: null, leaseMs: null }),
    ).toBeDefined();
    await expect(time.run(call)).rejects.toThrow(/not a JSON value/);
    const record = await store.get(sk);
    expect([record?.state, record?.result]).toEqual(["completed", null]);
    expect(heard.filter((e) => e.type === "failed" || e.type === "resolved")).toEqual([
      expect.objectContaining({ type: "failed" }),
      expect.objectContaining({ type: "resolved", how: "late_completion", by: undefined }),
    ]);
  });
});
