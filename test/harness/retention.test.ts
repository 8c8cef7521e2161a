import { describe, expect, it } from "vitest";
import {
  createHarness,
  defineTool,
  memoryStore,
  OutcomeUnknownError,
  type Sleep,
  ToolCallError,
} from "../../src/index.js";
import { effectLog } from "../support/effect-log.js";
import { flush } from "./support.js";

/**
 * A waiter whose record expired while it waited (issue 28, case 10a). Two harnesses stand for two processes on one
 * store and one clock that only the test moves; the waiter's pauses end when the test says, so that its look after
 * the other call has finished can come later than `retentionMs` (a stalled process, a loaded machine).
 */
function twoProcesses() {
  let now = 1_700_000_000_000;
  const clock = () => now;
  const store = memoryStore({ clock });
  const pauses: (() => void)[] = [];
  let paused!: () => void;
  let nextPause = new Promise<void>((resolve) => {
    paused = resolve;
  });
  const sleep: Sleep = () =>
    new Promise<void>((resolve) => {
      pauses.push(resolve);
      paused();
    });
  const options = { store, clock, leaseMs: 10_000, retentionMs: 5_000, wait: { maxDelayMs: 1_000 } };
  return {
    holder: createHarness(options),
    waiter: createHarness({ ...options, sleep }),
    /** Resolves once the waiter has paused. */
    async waiterPaused() {
      await nextPause;
      nextPause = new Promise<void>((resolve) => {
        paused = resolve;
      });
    },
    /** Moves the clock on by `ms`, then wakes the waiter. */
    wakeAfter(ms: number) {
      now += ms;
      pauses.shift()?.();
    },
  };
}

function gatedTool(effects: ReturnType<typeof effectLog>, fail = false) {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let started!: () => void;
  const began = new Promise<void>((resolve) => {
    started = resolve;
  });
  let runs = 0;
  const tool = defineTool({
    name: "send_email",
    effect: "unguarded",
    run: async (_args: { to: string }, ctx) => {
      runs++;
      if (runs === 1) {
        started();
        await gate;
        // The first run fails before its effect, saying so: the key is released for another run.
        if (fail) throw new ToolCallError("mail server refused", { retryable: false, noEffect: true });
      }
      effects.effect(ctx.idempotencyKey);
      return { sent: runs };
    },
  });
  return { tool, open, began };
}

describe("a call that waited on a claim never runs the tool afresh because retention ran out while it waited", () => {
  it("the other call completed and its record expired before the waiter looked again: OutcomeUnknownError, one effect", async () => {
    const effects = effectLog("retention");
    try {
      const p = twoProcesses();
      const { tool, open, began } = gatedTool(effects);
      const key = p.holder.key("task", tool, { to: "ada" });
      const first = p.holder.call("task", tool, { to: "ada" });
      await began;
      const second = p.waiter.call("task", tool, { to: "ada" });
      second.catch(() => {});
      await p.waiterPaused();
      open();
      expect(await first).toEqual({ sent: 1 });
      // The waiter's next look comes after the completed record's retention (5 s) has run out.
      p.wakeAfter(5_001);
      const error = await second.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      expect((error as OutcomeUnknownError).key).toBe(key);
      expect((error as Error).message).toMatch(/retentionMs/);
      expect(effects.count(key)).toBe(1);
    } finally {
      effects.cleanup();
    }
  });

  it("the other call failed without effect and released the key: the waiter runs it, as before", async () => {
    const effects = effectLog("released");
    try {
      const p = twoProcesses();
      const { tool, open, began } = gatedTool(effects, true);
      const key = p.holder.key("task", tool, { to: "ada" });
      const first = p.holder.call("task", tool, { to: "ada" });
      first.catch(() => {});
      await began;
      const second = p.waiter.call("task", tool, { to: "ada" });
      await p.waiterPaused();
      open();
      await expect(first).rejects.toThrow(/mail server refused/);
      await flush();
      // Within retention of the waiter's last look, an absent record can only be a released one.
      p.wakeAfter(900);
      expect(await second).toEqual({ sent: 2 });
      expect(effects.count(key)).toBe(1);
    } finally {
      effects.cleanup();
    }
  });

  it("refuses a retentionMs no longer than wait.maxDelayMs, naming both", () => {
    expect(() => createHarness({ retentionMs: 500 })).toThrow(TypeError);
    expect(() => createHarness({ retentionMs: 500 })).toThrow(
      /options\.retentionMs .*options\.wait\.maxDelayMs/,
    );
    expect(() => createHarness({ ttlMs: 1_000 })).toThrow(/options\.ttlMs .*options\.wait\.maxDelayMs/);
    expect(() => createHarness({ retentionMs: 500, wait: { maxDelayMs: 100 } })).not.toThrow();
  });
});
