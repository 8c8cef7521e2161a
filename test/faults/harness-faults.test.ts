import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import {
  CanonicalizationError,
  createHarness,
  defineTool,
  OutcomeUnknownError,
  StoreError,
} from "../../src/index.js";
import { memoryStore } from "../../src/store/memory.js";
import { eventLog } from "../harness/support.js";
import { effectLog } from "../support/effect-log.js";
import { flakyStore, isCompletion } from "../support/flaky-store.js";

/**
 * The issue-11 cases that need no server: each effect is counted in a file the fake owner appends to, and a second
 * harness on the same store stands for the process that retries or replays after the first one.
 */
const log = effectLog();
afterAll(() => log.cleanup());

/** Resolves when `released` is called: a tool that blocks until the test lets it finish. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let started!: () => void;
  const began = new Promise<void>((resolve) => {
    started = resolve;
  });
  return { opened, open, began, started };
}

describe("case 5: a tool that returns undefined or a non-JSON value after its effect", () => {
  it("records undefined as 'no result' and replays undefined without a second effect", async () => {
    const store = memoryStore();
    const sendEmail = defineTool({
      name: "sendEmail",
      effect: "unguarded",
      run: async (_args: { to: string }, ctx) => {
        log.effect(ctx.idempotencyKey);
      },
    });
    const first = createHarness({ store });
    const key = first.key("t5", sendEmail, { to: "a@example.com" });
    expect(await first.call("t5", sendEmail, { to: "a@example.com" })).toBeUndefined();
    const events = eventLog();
    const second = createHarness({ store, onEvent: events.onEvent });
    expect(await second.call("t5", sendEmail, { to: "a@example.com" })).toBeUndefined();
    expect(events.types()).toEqual(["replayed"]);
    expect(log.count(key)).toBe(1);
    expect((await second.get(key))?.state).toBe("completed");
  });

  it("a keyed tool's Map result fails the call but does not free the key for another run", async () => {
    const store = memoryStore();
    const tool = defineTool({
      name: "mapTool",
      effect: "keyed",
      run: async (_args: { n: number }, ctx) => {
        log.effect(ctx.idempotencyKey);
        return new Map([["a", 1]]) as unknown as Record<string, number>;
      },
    });
    const harness = createHarness({ store, retry: { retries: 0 } });
    const key = harness.key("t5b", tool, { n: 1 });
    await expect(harness.call("t5b", tool, { n: 1 })).rejects.toBeInstanceOf(CanonicalizationError);
    await expect(createHarness({ store }).call("t5b", tool, { n: 1 })).rejects.toBeInstanceOf(
      CanonicalizationError,
    );
    expect(log.count(key)).toBe(1);
  });
});

describe("case 4: ttlMs shorter than a run", () => {
  it("renewal moves expiresAt, so a second harness waits instead of running the tool concurrently", async () => {
    const store = memoryStore();
    const g = gate();
    const tool = defineTool({
      name: "slow",
      effect: "unguarded",
      run: async (_args: { n: number }, ctx) => {
        log.effect(ctx.idempotencyKey);
        g.started();
        await g.opened;
        return "done";
      },
    });
    const options = { store, leaseMs: 3_000, ttlMs: 300, wait: { timeoutMs: 60_000, maxDelayMs: 100 } };
    const first = createHarness(options);
    const key = first.key("t4", tool, { n: 1 });
    const running = first.call("t4", tool, { n: 1 });
    await g.began;
    // Well past ttlMs, while renewals keep the lease alive.
    await sleep(1_500);
    let secondSettled = false;
    const second = createHarness(options)
      .call("t4", tool, { n: 1 })
      .finally(() => {
        secondSettled = true;
      });
    await sleep(300);
    // The property of case 4: while the first holds the key, the second waits and has not run the tool.
    expect(log.count(key)).toBe(1);
    expect(secondSettled).toBe(false);
    g.open();
    expect(await running).toBe("done");
    // The completed record is kept for ttlMs (300 ms) only: a waiter that looks later than that on a loaded machine
    // finds the key gone, and then cannot tell whether the call finished, so it says the outcome is unknown rather
    // than run the tool again (issue 28, case 10a). Either way the tool ran once.
    const outcome = await second.then(
      (value) => value,
      (error: unknown) => error,
    );
    if (outcome !== "done") expect(outcome).toBeInstanceOf(OutcomeUnknownError);
    expect(log.count(key)).toBe(1);
  });
});

describe("case 9: the completion write across a store outage", () => {
  it("is retried with backoff across an outage longer than leaseMs, so a replay does not run the tool again", async () => {
    const flaky = flakyStore(memoryStore());
    const tool = defineTool({
      name: "charge",
      effect: "keyed",
      run: async (_args: { n: number }, ctx) => {
        log.effect(ctx.idempotencyKey);
        // The store goes down as the effect completes: renewals and the completion fail for 1.5 leases.
        flaky.down(450);
        return { ok: true };
      },
    });
    const options = { store: flaky.store, leaseMs: 300 };
    const first = createHarness(options);
    const key = first.key("t9", tool, { n: 1 });
    expect(await first.call("t9", tool, { n: 1 })).toEqual({ ok: true });
    expect(flaky.calls.filter((c) => c.method === "update" && c.failed).length).toBeGreaterThan(3);
    const events = eventLog();
    expect(await createHarness({ ...options, onEvent: events.onEvent }).call("t9", tool, { n: 1 })).toEqual({
      ok: true,
    });
    expect(events.types()).toEqual(["replayed"]);
    expect(log.count(key)).toBe(1);
  });

  it("gives up after its budget with a StoreError, leaving the key locked: an unguarded tool never runs again", async () => {
    const flaky = flakyStore(memoryStore());
    flaky.failWhen(isCompletion);
    const tool = defineTool({
      name: "post",
      effect: "unguarded",
      run: async (_args: { n: number }, ctx) => {
        log.effect(ctx.idempotencyKey);
        return "posted";
      },
    });
    const events = eventLog();
    const first = createHarness({ store: flaky.store, leaseMs: 200, onEvent: events.onEvent });
    const key = first.key("t9b", tool, { n: 1 });
    const error = await first.call("t9b", tool, { n: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect(events.types()).toContain("failed");
    flaky.up();
    expect((await first.get(key))?.state).toBe("pending");
    await sleep(300); // the lease lapses (renewal stopped when the holder gave up)
    await expect(
      createHarness({ store: flaky.store, leaseMs: 200 }).call("t9b", tool, { n: 1 }),
    ).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(log.count(key)).toBe(1);
  });

  it("a completion applied whose reply was lost: the retry finds it applied, and the call ends with its result", async () => {
    const inner = memoryStore();
    let lostReplies = 0;
    // The server applies the first completion and the connection drops before its reply (as in a failover).
    const store = {
      ...inner,
      async update(...args: Parameters<typeof inner.update>) {
        const applied = await inner.update(...args);
        if (args[2].state === "completed" && lostReplies++ === 0) {
          throw new StoreError("lossy", "update", args[0], "lossy store: update failed: connection reset", {
            cause: new Error("ECONNRESET"),
          });
        }
        return applied;
      },
    };
    const tool = defineTool({
      name: "post",
      effect: "unguarded",
      run: async (_args: { n: number }, ctx) => {
        log.effect(ctx.idempotencyKey);
        return "posted";
      },
    });
    const events = eventLog();
    const harness = createHarness({ store, leaseMs: 300, onEvent: events.onEvent });
    const key = harness.key("t9c", tool, { n: 1 });
    expect(await harness.call("t9c", tool, { n: 1 })).toBe("posted");
    expect(lostReplies).toBe(2);
    expect(events.types()).not.toContain("failed");
    expect((await harness.get(key))?.state).toBe("completed");
    expect(await createHarness({ store, leaseMs: 300 }).call("t9c", tool, { n: 1 })).toBe("posted");
    expect(log.count(key)).toBe(1);
  });
});

describe("case 8: abort and per-tool timeouts", () => {
  it("harness.call settles on abort although the tool ignores the signal; the tool's outcome is still recorded", async () => {
    const store = memoryStore();
    const g = gate();
    const tool = defineTool({
      name: "stubborn",
      effect: "keyed",
      run: async (_args: { n: number }, ctx) => {
        g.started();
        await g.opened;
        log.effect(ctx.idempotencyKey);
        return 42;
      },
    });
    const harness = createHarness({ store });
    const key = harness.key("t8", tool, { n: 1 });
    const controller = new AbortController();
    const call = harness.call("t8", tool, { n: 1 }, { signal: controller.signal });
    await g.began;
    controller.abort(new Error("stop"));
    await expect(call).rejects.toThrow("stop");
    g.open();
    for (let i = 0; i < 1000 && (await harness.get(key))?.state !== "completed"; i++) await sleep(5);
    expect(await createHarness({ store }).call("t8", tool, { n: 1 })).toBe(42);
    expect(log.count(key)).toBe(1);
  });

  it("a tool's timeoutMs aborts ctx.signal", async () => {
    const tool = defineTool({
      name: "timed",
      effect: "idempotent",
      timeoutMs: 50,
      run: (_args: { n: number }, ctx) =>
        new Promise<string>((resolve) => {
          ctx.signal.addEventListener("abort", () =>
            resolve(`aborted: ${(ctx.signal.reason as Error).name}`),
          );
        }),
    });
    expect(await createHarness().call("t8b", tool, { n: 1 })).toBe("aborted: TimeoutError");
  });
});
