import { describe, expect, it } from "vitest";
import {
  CanonicalizationError,
  createHarness,
  defineTool,
  IdempotencyConflictError,
  memoryStore,
  OutcomeUnknownError,
  type RetryContext,
  type RetryOptions,
  ToolCallError,
} from "../../src/index.js";
import { eventLog, fakeTime } from "./support.js";

/** A keyed tool that fails with the given errors in turn, then succeeds; it notes when and how each attempt ran. */
function failing(errors: unknown[], effect: "keyed" | "read" | "unguarded" = "keyed") {
  const attempts: { at: number; attempt: number; key: string }[] = [];
  const time = fakeTime();
  const tool = defineTool({
    name: "flaky",
    effect,
    run: (_args: { n: number }, ctx) => {
      attempts.push({ at: time.clock(), attempt: ctx.attempt, key: ctx.idempotencyKey });
      const error = errors[attempts.length - 1];
      if (error !== undefined) throw error;
      return "ok";
    },
  });
  return { tool, attempts, time, gaps: () => attempts.slice(1).map((a, i) => a.at - attempts[i]!.at) };
}

function harnessOn(time: ReturnType<typeof fakeTime>, retry: RetryOptions, extra = {}) {
  const store = memoryStore({ clock: time.clock });
  const log = eventLog();
  const harness = createHarness({
    store,
    clock: time.clock,
    sleep: time.sleep,
    retry,
    onEvent: log.onEvent,
    ...extra,
  });
  return { harness, store, log };
}

describe("retries", () => {
  it("backs off exponentially, always with the same key, and counts attempts", async () => {
    const { tool, attempts, time, gaps } = failing([new Error("a"), new Error("b"), new Error("c")]);
    const { harness, log } = harnessOn(time, { minDelayMs: 100, factor: 2, jitter: false });
    expect(await time.run(harness.call("t", tool, { n: 1 }))).toBe("ok");
    expect(gaps()).toEqual([100, 200, 400]);
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
    expect(new Set(attempts.map((a) => a.key)).size).toBe(1);
    expect(log.types()).toEqual(["retried", "retried", "retried", "executed"]);
    expect((await harness.get(attempts[0]!.key))?.attempts).toBe(4);
  });

  it("caps the delay at maxDelayMs and jitters it between half and all of it", async () => {
    const { tool, time, gaps } = failing(Array.from({ length: 6 }, () => new Error("x")));
    const { harness } = harnessOn(time, { retries: 6, minDelayMs: 100, maxDelayMs: 1_000, factor: 4 });
    await time.run(harness.call("t", tool, { n: 1 }));
    const full = [100, 400, 1_000, 1_000, 1_000, 1_000];
    gaps().forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual(full[i]! / 2);
      expect(gap).toBeLessThanOrEqual(full[i]!);
    });
  });

  it("honours retryAfterMs from any error, bounded by maxDelayMs", async () => {
    const ownError = Object.assign(new Error("429"), { retryAfterMs: 60_000 });
    const { tool, time, gaps } = failing([new ToolCallError("503", { retryAfterMs: 2_500 }), ownError]);
    const { harness } = harnessOn(time, { minDelayMs: 10, maxDelayMs: 10_000 });
    await time.run(harness.call("t", tool, { n: 1 }));
    expect(gaps()).toEqual([2_500, 10_000]);
  });

  it("throws the last error once the retries are used up, and releases the claim", async () => {
    const errors = [new Error("1"), new Error("2"), new Error("3")];
    const { tool, attempts, time } = failing(errors);
    const { harness, store, log } = harnessOn(time, { retries: 2, minDelayMs: 1 });
    await expect(time.run(harness.call("t", tool, { n: 1 }))).rejects.toBe(errors[2]);
    expect(attempts).toHaveLength(3);
    expect(log.types()).toEqual(["retried", "retried", "failed"]);
    expect(await store.list()).toEqual([]);
  });

  it.each([
    ["a TypeError", new TypeError("bad argument")],
    ["retryable: false", new ToolCallError("400", { retryable: false })],
    ["a CanonicalizationError", new CanonicalizationError("$.x", "nope")],
    ["an IdempotencyConflictError", new IdempotencyConflictError("k", "conflict")],
    ["retryable: false on a foreign error", Object.assign(new Error("422"), { retryable: false })],
  ])("does not retry %s by default", async (_, error) => {
    const { tool, attempts, time } = failing([error]);
    const { harness } = harnessOn(time, { minDelayMs: 1 });
    await expect(time.run(harness.call("t", tool, { n: 1 }))).rejects.toBe(error);
    expect(attempts).toHaveLength(1);
  });

  it("retries a TypeError that says retryable: true (a fetch network failure, say)", async () => {
    const { tool, attempts, time } = failing([
      Object.assign(new TypeError("fetch failed"), { retryable: true }),
    ]);
    const { harness } = harnessOn(time, { minDelayMs: 1 });
    expect(await time.run(harness.call("t", tool, { n: 1 }))).toBe("ok");
    expect(attempts).toHaveLength(2);
  });

  it("retries fetch's own network failure (a TypeError caused by the socket's error): a lost reply", async () => {
    const socket = Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" });
    const { tool, attempts, time } = failing([new TypeError("fetch failed", { cause: socket })]);
    const { harness } = harnessOn(time, { minDelayMs: 1 });
    expect(await time.run(harness.call("t", tool, { n: 1 }))).toBe("ok");
    expect(attempts).toHaveLength(2);
  });

  it("asks shouldRetry with one read-only context; undefined keeps the default", async () => {
    const seen: RetryContext[] = [];
    const errors = [new Error("keep default"), new TypeError("retry anyway"), new Error("stop")];
    const { tool, attempts, time } = failing(errors);
    const { harness } = harnessOn(time, {
      minDelayMs: 1,
      shouldRetry: (ctx) => {
        seen.push(ctx);
        if (ctx.error === errors[1]) return true;
        if (ctx.error === errors[2]) return false;
        return undefined;
      },
    });
    await expect(time.run(harness.call("task", tool, { n: 1 }))).rejects.toBe(errors[2]);
    expect(attempts).toHaveLength(3);
    expect(seen.map((c) => [c.taskId, c.tool, c.attempt, c.key])).toEqual(
      [1, 2, 3].map((n) => ["task", "flaky", n, harness.key("task", tool, { n: 1 })]),
    );
    expect(Object.isFrozen(seen[0])).toBe(true);
  });

  it("retries read tools too", async () => {
    const { tool, attempts, time } = failing([new Error("timeout")], "read");
    const { harness } = harnessOn(time, { minDelayMs: 1 });
    expect(await time.run(harness.call("t", tool, { n: 1 }))).toBe("ok");
    expect(attempts).toHaveLength(2);
  });

  it("writes the attempt count to the ledger before each retry", async () => {
    const time = fakeTime();
    const { harness, store } = harnessOn(time, { minDelayMs: 1 });
    const seenInLedger: number[] = [];
    const tool = defineTool({
      name: "counted",
      effect: "keyed",
      run: async (_: object, ctx) => {
        seenInLedger.push((await store.get(`call:${ctx.idempotencyKey}`))!.attempts);
        if (ctx.attempt < 3) throw new Error("again");
        return 1;
      },
    });
    await time.run(harness.call("t", tool, {}));
    expect(seenInLedger).toEqual([0, 1, 2]);
  });
});

describe("abort signal", () => {
  it("is passed to the tool as ctx.signal, and a never-aborted one without a caller's signal", async () => {
    const signals: AbortSignal[] = [];
    const tool = defineTool({
      name: "s",
      effect: "keyed",
      run: (_: { n: number }, ctx) => {
        signals.push(ctx.signal);
        return 1;
      },
    });
    const harness = createHarness();
    const controller = new AbortController();
    await harness.call("t", tool, { n: 1 }, { signal: controller.signal });
    await harness.call("t", tool, { n: 2 });
    expect(signals[0]).toBe(controller.signal);
    expect(signals[1]).toBeInstanceOf(AbortSignal);
    expect(signals[1]!.aborted).toBe(false);
  });

  it("rejects at once, running nothing, when already aborted", async () => {
    const { tool, attempts, time } = failing([]);
    const { harness, store } = harnessOn(time, {});
    const reason = new Error("user cancelled");
    await expect(harness.call("t", tool, { n: 1 }, { signal: AbortSignal.abort(reason) })).rejects.toBe(
      reason,
    );
    expect(attempts).toHaveLength(0);
    expect(await store.list()).toEqual([]);
  });

  it("stops retrying during the backoff and releases the claim", async () => {
    const { tool, attempts, time } = failing([new Error("1"), new Error("2")]);
    const { harness, store, log } = harnessOn(time, { minDelayMs: 1_000, jitter: false });
    const controller = new AbortController();
    const reason = new Error("deadline");
    const call = harness.call("t", tool, { n: 1 }, { signal: controller.signal });
    const outcome = call.catch((e: unknown) => e);
    await time.advance(500);
    expect(attempts).toHaveLength(1);
    controller.abort(reason);
    expect(await outcome).toBe(reason);
    await time.advance(10_000);
    expect(attempts).toHaveLength(1);
    expect(await store.list()).toEqual([]);
    expect(log.types()).toEqual(["retried"]);
  });

  it("does not retry a keyed attempt that failed because the signal aborted", async () => {
    const time = fakeTime();
    const { harness, store } = harnessOn(time, { minDelayMs: 1 });
    const controller = new AbortController();
    let runs = 0;
    const tool = defineTool({
      name: "long",
      effect: "keyed",
      run: async (_: object, ctx) => {
        runs++;
        await time.sleep(10_000, ctx.signal);
        return 1;
      },
    });
    const outcome = harness.call("t", tool, {}, { signal: controller.signal }).catch((e: unknown) => e);
    await time.advance(100);
    controller.abort(new Error("stop"));
    expect(await outcome).toMatchObject({ message: "stop" });
    expect(runs).toBe(1);
    expect(await store.list()).toEqual([]);
  });

  it("an unguarded attempt aborted after it was sent has an unknown outcome", async () => {
    const time = fakeTime();
    const { harness } = harnessOn(time, { minDelayMs: 1 });
    const controller = new AbortController();
    const sent: string[] = [];
    const tool = defineTool({
      name: "post",
      effect: "unguarded",
      run: async (_: object, ctx) => {
        sent.push(ctx.idempotencyKey);
        await time.sleep(10_000, ctx.signal);
        return 1;
      },
    });
    const outcome = harness.call("t", tool, {}, { signal: controller.signal }).catch((e: unknown) => e);
    await time.advance(100);
    controller.abort(new Error("stop"));
    expect(await outcome).toBeInstanceOf(OutcomeUnknownError);
    expect(sent).toHaveLength(1);
    expect((await harness.get(sent[0]!))?.state).toBe("outcome_unknown");
  });

  it("a caller sharing another's run stops waiting on its own signal, and the run goes on", async () => {
    const time = fakeTime();
    const { harness } = harnessOn(time, {});
    let runs = 0;
    const tool = defineTool({
      name: "long",
      effect: "keyed",
      run: async () => {
        runs++;
        await time.sleep(1_000);
        return "done";
      },
    });
    const first = harness.call("t", tool, {});
    const reason = new Error("second gives up");
    const second = harness
      .call("t", tool, {}, { signal: AbortSignal.abort(reason) })
      .catch((e: unknown) => e);
    const controller = new AbortController();
    const third = harness.call("t", tool, {}, { signal: controller.signal }).catch((e: unknown) => e);
    expect(await second).toBe(reason);
    controller.abort(reason);
    expect(await third).toBe(reason);
    expect(await time.run(first)).toBe("done");
    expect(runs).toBe(1);
  });
});
