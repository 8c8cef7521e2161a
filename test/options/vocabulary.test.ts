import { describe, expect, it } from "vitest";
import { createHarness, defineTool } from "../../src/harness/index.js";
import { resolveInspectorOptions } from "../../src/inspector/options.js";
import { idempotencyEngine } from "../../src/owner/engine.js";
import { memoryStore } from "../../src/store/memory.js";
import type { Store } from "../../src/store/types.js";

const DAY = 24 * 60 * 60 * 1000;

function setup() {
  const clock = { now: 1_700_000_000_000 };
  const store = memoryStore({ clock: () => clock.now });
  return { clock, store };
}

/** Records that expire at once, put straight into the store as any of its users would. */
async function expired(store: Store, clock: { now: number }, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await store.claim(`http:${i}`, { fingerprint: "f", token: "t", leaseMs: 1, ttlMs: 1 });
  }
  clock.now += 10;
}

describe("retention is retentionMs everywhere", () => {
  it("the harness keeps a record for retentionMs", async () => {
    const { clock, store } = setup();
    const harness = createHarness({ store, clock: () => clock.now, retentionMs: 60_000 });
    const tool = defineTool({ name: "t", effect: "keyed", run: async () => 1 });
    await harness.call("task", tool, {});
    const key = harness.key("task", tool, {});
    clock.now += 59_999;
    expect(await harness.get(key)).toBeDefined();
    clock.now += 1;
    expect(await harness.get(key)).toBeUndefined();
  });

  it("ttlMs, its deprecated name, still works, alone or with the same value", async () => {
    for (const options of [{ ttlMs: 60_000 }, { ttlMs: 60_000, retentionMs: 60_000 }]) {
      const { clock, store } = setup();
      const harness = createHarness({ store, clock: () => clock.now, ...options });
      const tool = defineTool({ name: "t", effect: "keyed", run: async () => 1 });
      await harness.call("task", tool, {});
      clock.now += 60_000;
      expect(await harness.get(harness.key("task", tool, {}))).toBeUndefined();
    }
  });

  it("refuses both names with different values, naming both", () => {
    expect(() => createHarness({ ttlMs: 1_000, retentionMs: 2_000 })).toThrow(
      new TypeError(
        "options.retentionMs and options.ttlMs (its deprecated name) were both given, with different values " +
          "(2000 and 1000); give only options.retentionMs",
      ),
    );
    expect(() => createHarness({ retentionMs: -1 })).toThrow(/options\.retentionMs must be/);
    expect(() => createHarness({ ttlMs: -1 })).toThrow(/options\.ttlMs must be/);
  });

  it("the inspector takes retentionMs too, and ttlMs as its deprecated name", () => {
    const store = memoryStore();
    expect(resolveInspectorOptions({ store, retentionMs: DAY }).retentionMs).toBe(DAY);
    expect(resolveInspectorOptions({ store, ttlMs: DAY }).retentionMs).toBe(DAY);
    expect(resolveInspectorOptions({ store }).retentionMs).toBe(7 * DAY);
    expect(() => resolveInspectorOptions({ store, ttlMs: DAY, retentionMs: 2 * DAY })).toThrow(TypeError);
  });
});

describe("purge means one thing: every expired record, batchSize at a time", () => {
  it("the harness and the middleware engine purge until done", async () => {
    for (const make of [
      (store: Store) => createHarness({ store }),
      (store: Store) => idempotencyEngine({ store, scope: "single-tenant" }),
    ]) {
      const { clock, store } = setup();
      await expired(store, clock, 7);
      const calls: number[] = [];
      const counted: Store = {
        ...store,
        purge: async (o) => {
          calls.push(o?.limit ?? -1);
          return store.purge(o);
        },
      };
      expect(await make(counted).purge({ batchSize: 3 })).toBe(7);
      expect(calls).toEqual([3, 3, 3]);
      await expired(store, clock, 2);
      expect(await make(counted).purge()).toBe(2);
    }
  });

  it("the harness's limit, its deprecated form, still removes one batch", async () => {
    const { clock, store } = setup();
    await expired(store, clock, 5);
    const harness = createHarness({ store });
    expect(await harness.purge({ limit: 2 })).toBe(2);
    expect(await harness.purge({ batchSize: 2 })).toBe(3);
    await expect(harness.purge({ limit: 2, batchSize: 2 })).rejects.toThrow(
      /options\.limit .* and options\.batchSize/,
    );
  });
});
