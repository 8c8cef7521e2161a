import { describe, expect, it } from "vitest";
import { createHarness, defineTool, memoryStore } from "../../src/index.js";
import { idempotencyEngine } from "../../src/owner/engine.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import type { Store } from "../../src/store/types.js";

/** Counts turns of the event loop (setImmediate callbacks) until stopped. */
function turnCounter() {
  let turns = 0;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    get turns() {
      return turns;
    },
    stop() {
      stopped = true;
    },
  };
}

/** Fills `store` with `count` records that are expired by the time purge runs (on the store's own clock). */
async function expired(store: Store, count: number, clock: { now: number }) {
  for (let i = 0; i < count; i++) {
    await store.claim(`x:${i}`, { fingerprint: "f", token: "t", leaseMs: 1_000, ttlMs: 1_000 });
  }
  clock.now += 2_000;
}

describe("long synchronous loops yield to the event loop", () => {
  for (const [name, make] of [
    ["memory", () => memoryStore()],
    ["sqlite", () => sqliteStore(":memory:")],
  ] as const) {
    it(`a loop of await harness.call() with a synchronous tool on the ${name} store lets a macrotask in`, async () => {
      const harness = createHarness({ store: make() });
      const add = defineTool({ name: "add", effect: "idempotent", run: (args: { n: number }) => args.n + 1 });
      let ran = false;
      setImmediate(() => {
        ran = true;
      });
      // Bounded by work, not time: before pacing, no number of calls let the setImmediate run.
      let calls = 0;
      while (!ran && calls < 200_000) await harness.call("task", add, { n: calls++ });
      expect(ran).toBe(true);
    });
  }

  it("sqliteStore.purge deletes in small statements and yields after each", async () => {
    const clock = { now: 1_700_000_000_000 };
    const store = sqliteStore(":memory:", { clock: () => clock.now });
    await expired(store, 2_100, clock);
    const counter = turnCounter();
    expect(await store.purge({ limit: 5_000 })).toBe(2_100);
    counter.stop();
    // 500 rows a statement: five statements, each followed by a turn.
    expect(counter.turns).toBeGreaterThanOrEqual(5);
    expect(await store.purge()).toBe(0);
  });

  it("the middleware engine's purge yields between batches", async () => {
    const clock = { now: 1_700_000_000_000 };
    const store = memoryStore({ clock: () => clock.now });
    await expired(store, 1_000, clock);
    const engine = idempotencyEngine({ store, scope: "single-tenant" });
    const counter = turnCounter();
    expect(await engine.purge({ batchSize: 100 })).toBe(1_000);
    counter.stop();
    expect(counter.turns).toBeGreaterThanOrEqual(10);
  });
});
