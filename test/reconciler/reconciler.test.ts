import { afterEach, describe, expect, it } from "vitest";
import {
  createHarness,
  defineTool,
  type LedgerEvent,
  memoryStore,
  OutcomeUnknownError,
  type Store,
} from "../../src/index.js";
import { createReconciler, type ReconcilerEvent } from "../../src/reconciler/index.js";
import { effectLog } from "../support/effect-log.js";

type Args = { n: number };

/**
 * A world the tests own: `sent` holds the calls that reached the "owner" (written before the tool fails with a lost
 * answer); the reconcile of the reconciler's tool reads it, never the ledger.
 */
function world() {
  const log = effectLog("owner");
  const asked = effectLog("asked");
  const harnessTool = defineTool<Args, { n: number }>({
    name: "charge",
    effect: "unguarded",
    run: (args, ctx) => {
      if (args.n % 2 === 0) log.effect(ctx.idempotencyKey);
      throw new Error("socket hang up");
    },
  });
  const reconcilingTool = defineTool<Args, { n: number }>({
    name: "charge",
    effect: "unguarded",
    run: () => {
      throw new Error("the reconciler never runs a tool");
    },
    reconcile: (args, ctx) => {
      asked.effect(ctx.idempotencyKey);
      return log.count(ctx.idempotencyKey) > 0
        ? { status: "done", result: { n: args.n }, evidence: { seen: true } }
        : { status: "not_done", evidence: { seen: false } };
    },
  });
  return {
    log,
    asked,
    harnessTool,
    reconcilingTool,
    cleanup: () => {
      log.cleanup();
      asked.cleanup();
    },
  };
}

async function unknowns(store: Store, tool: ReturnType<typeof world>["harnessTool"], count: number) {
  const harness = createHarness({ store, retry: { retries: 0 } });
  const keys: string[] = [];
  for (let n = 0; n < count; n++) {
    await expect(harness.call("task", tool, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
    keys.push(harness.key("task", tool, { n }));
  }
  return { harness, keys };
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe("createReconciler", () => {
  it("decides every unknown outcome once: done ones completed, not-done ones approved to run", async () => {
    const w = world();
    cleanups.push(w.cleanup);
    const store = memoryStore();
    const { harness, keys } = await unknowns(store, w.harnessTool, 6);
    const events: ReconcilerEvent[] = [];
    const reconciler = createReconciler({
      store,
      tools: [w.reconcilingTool],
      id: "rec-1",
      onEvent: (e) => events.push(e),
    });
    const report = await reconciler.sweep();
    expect(report).toMatchObject({ examined: 6, done: 3, notDone: 3, undecided: 0, conflict: 0, failed: 0 });
    for (const [n, key] of keys.entries()) {
      const entry = (await harness.get(key))!;
      expect(entry.state).toBe(n % 2 === 0 ? "completed" : "approved");
      const resolved = entry.events.filter((e) => e.type === "resolved");
      expect(resolved).toEqual([
        expect.objectContaining({
          by: "rec-1",
          how: "reconcile",
          outcome: n % 2 === 0 ? "done" : "not_done",
          evidence: { seen: n % 2 === 0 },
        }),
      ]);
      expect(w.asked.count(key)).toBe(1);
    }
    expect(events.filter((e) => e.type === "reconciled")).toHaveLength(6);
    // A second sweep finds nothing left to decide.
    expect(await reconciler.sweep()).toMatchObject({ examined: 0 });
    // The done ones replay their result; the not-done ones run when called again (and fail again here).
    const done = w.reconcilingTool;
    await expect(harness.call("task", done, { n: 0 })).resolves.toEqual({ n: 0 });
    expect(w.log.count()).toBe(3);
  });

  it("leaves what it cannot decide for a person, with the reason in the audit trail, and backs off", async () => {
    const w = world();
    cleanups.push(w.cleanup);
    const store = memoryStore();
    let now = 1_000_000;
    const { harness, keys } = await unknowns(store, w.harnessTool, 2);
    const unsure = defineTool<Args, unknown>({
      name: "charge",
      effect: "unguarded",
      run: () => undefined,
      reconcile: (_, ctx) => {
        w.asked.effect(ctx.idempotencyKey);
        return undefined;
      },
    });
    const reconciler = createReconciler({
      store,
      tools: { unsure, notATool: 42 },
      id: "rec-unsure",
      clock: () => now,
      backoff: { minDelayMs: 1_000, maxDelayMs: 4_000 },
    });
    expect(await reconciler.sweep()).toMatchObject({ examined: 2, undecided: 2 });
    // Within the backoff, nobody is asked again.
    expect(await reconciler.sweep()).toMatchObject({ examined: 2, skipped: 2 });
    now += 1_000;
    expect(await reconciler.sweep()).toMatchObject({ undecided: 2 });
    for (const key of keys) {
      const entry = (await harness.get(key))!;
      expect(entry.state).toBe("outcome_unknown");
      const notes = entry.events.filter((e) => e.type === "reconcile_undecided");
      // One note, replaced on each try: the trail does not grow with the tries.
      expect(notes).toEqual([
        {
          type: "reconcile_undecided",
          at: now,
          by: "rec-unsure",
          reason: "reconcile could not tell",
          tries: 2,
          nextAt: now + 2_000,
        },
      ]);
      expect(w.asked.count(key)).toBe(2);
    }
    // A person resolves it, and the reconciler no longer looks at it.
    await harness.resolve(keys[0]!, { result: { n: 0 } }, { by: "ana" });
    now += 10_000;
    expect(await reconciler.sweep()).toMatchObject({ examined: 1, undecided: 1 });
  });

  it("says which records it has no tool for, without asking anything", async () => {
    const w = world();
    cleanups.push(w.cleanup);
    const store = memoryStore();
    const { harness, keys } = await unknowns(store, w.harnessTool, 1);
    const other = defineTool({
      name: "other",
      effect: "unguarded",
      run: () => 1,
      reconcile: () => undefined,
    });
    expect(await createReconciler({ store, tools: [other], id: "r" }).sweep()).toMatchObject({
      undecided: 1,
    });
    const last = (await harness.get(keys[0]!))!.events.at(-1) as Extract<
      LedgerEvent,
      { type: "reconcile_undecided" }
    >;
    expect(last.reason).toBe(`no tool named "charge" among this reconciler's tools`);
  });

  it("stop() mid-sweep: the record being asked is written, none is started after, none is left pending", async () => {
    const w = world();
    cleanups.push(w.cleanup);
    const store = memoryStore();
    const { harness, keys } = await unknowns(store, w.harnessTool, 5);
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = defineTool<Args, unknown>({
      name: "charge",
      effect: "unguarded",
      run: () => undefined,
      reconcile: async (_, ctx) => {
        w.asked.effect(ctx.idempotencyKey);
        entered();
        await gate;
        return { status: "not_done" };
      },
    });
    const reconciler = createReconciler({ store, tools: [slow], concurrency: 1 });
    const swept = reconciler.sweep();
    await inside;
    const stopped = reconciler.stop();
    release();
    await stopped;
    const report = await swept;
    expect(report.notDone).toBe(1);
    expect(w.asked.count()).toBe(1);
    const states = await Promise.all(keys.map(async (k) => (await harness.get(k))!.state));
    expect(states.filter((s) => s === "approved")).toHaveLength(1);
    expect(states.filter((s) => s === "outcome_unknown")).toHaveLength(4);
    // Stopped for good: a sweep after stop() starts nothing.
    expect(await reconciler.sweep()).toMatchObject({ done: 0, notDone: 0, undecided: 0 });
    expect(w.asked.count()).toBe(1);
  });

  it("a reconcile that gives up on the stop signal puts its record back as it was", async () => {
    const w = world();
    cleanups.push(w.cleanup);
    const store = memoryStore();
    const { harness, keys } = await unknowns(store, w.harnessTool, 1);
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const aborting = defineTool<Args, unknown>({
      name: "charge",
      effect: "unguarded",
      run: () => undefined,
      reconcile: (_, ctx) =>
        new Promise((_, reject) => {
          entered();
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
        }),
    });
    const reconciler = createReconciler({ store, tools: [aborting] });
    const swept = reconciler.sweep();
    await inside;
    await reconciler.stop();
    expect(await swept).toMatchObject({ undecided: 0, skipped: 1 });
    const entry = (await harness.get(keys[0]!))!;
    expect(entry.state).toBe("outcome_unknown");
    expect(entry.events.some((e) => e.type === "reconcile_undecided")).toBe(false);
  });

  it("a crash after the take leaves the record pending and lapsing: the next reconciler decides it", async () => {
    const w = world();
    cleanups.push(w.cleanup);
    let now = 5_000_000;
    const store = memoryStore({ clock: () => now });
    const harness = createHarness({ store, retry: { retries: 0 }, clock: () => now });
    await expect(harness.call("task", w.harnessTool, { n: 0 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    const key = harness.key("task", w.harnessTool, { n: 0 });
    // What a reconciler that died after its take leaves: pending under its token, attempts counted.
    await store.update(
      `call:${key}`,
      { state: "outcome_unknown" },
      { state: "pending", token: "dead", leaseMs: 1_000 },
    );
    const next = createReconciler({ store, tools: [w.reconcilingTool], id: "next", clock: () => now });
    expect(await next.sweep()).toMatchObject({ done: 0, skipped: 1 });
    now += 1_000;
    expect(await next.sweep()).toMatchObject({ done: 1 });
    const entry = (await harness.get(key))!;
    expect(entry.state).toBe("completed");
    expect(entry.events.map((e) => e.type)).toEqual(["outcome_unknown", "taken_over", "resolved"]);
    expect(w.asked.count(key)).toBe(1);
  });

  it("validates its options, naming the one that is wrong", () => {
    const store = memoryStore();
    const tool = defineTool({ name: "t", effect: "unguarded", run: () => 1 });
    expect(() => createReconciler({ store: {} as Store, tools: [tool] })).toThrow(/options\.store/);
    expect(() => createReconciler({ store, tools: [] })).toThrow(/options\.tools/);
    expect(() => createReconciler({ store, tools: [tool], concurrency: 0 })).toThrow(/options\.concurrency/);
    expect(() => createReconciler({ store, tools: [tool], backoff: { minDelayMs: -1 } })).toThrow(
      /options\.backoff\.minDelayMs/,
    );
    expect(() => createReconciler({ store, tools: [tool, tool] })).toThrow(/two tools named "t"/);
  });
});
