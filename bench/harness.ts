import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bench } from "tinybench";
import { createHarness, defineTool } from "../src/harness/index.js";
import { sqliteStore } from "../src/sqlite/index.js";
import { memoryStore } from "../src/store/memory.js";
import type { Store } from "../src/store/types.js";
import { printTable } from "./table.js";

const noop = defineTool({
  name: "noop",
  effect: "keyed",
  run: async (args: { n: number }) => ({ ok: args.n }),
});

/** The stores the harness runs on here; the server stores add theirs when their services answer. */
export type StoreMaker = { name: string; make: () => Promise<{ store: Store; close: () => Promise<void> }> };

export const localStores: StoreMaker[] = [
  { name: "memory", make: async () => ({ store: memoryStore(), close: async () => {} }) },
  {
    name: "SQLite file",
    make: async () => {
      const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-"));
      const store = sqliteStore(join(dir, "ledger.db"));
      return {
        store,
        close: async () => {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

/** What `harness.call` adds to a no-op `keyed` tool: a fresh key (claim, run, complete) and a replay (one read). */
export async function benchHarness(stores: StoreMaker[] = localStores): Promise<void> {
  const rows: string[][] = [];
  for (const maker of stores) {
    const { store, close } = await maker.make();
    const harness = createHarness({ store });
    let fresh = 0;
    let replay = 0;
    const REPLAYS = 1000;
    for (let i = 0; i < REPLAYS; i++) await harness.call("bench-replay", noop, { n: i });
    const bench = new Bench({ time: 1500, warmup: true, warmupTime: 200 });
    bench.add("bare tool", async () => {
      await noop.run({ n: fresh }, undefined as never);
    });
    bench.add("fresh key", async () => {
      await harness.call("bench-fresh", noop, { n: fresh++ });
    });
    bench.add("replay", async () => {
      await harness.call("bench-replay", noop, { n: replay++ % REPLAYS });
    });
    await bench.run();
    for (const task of bench.tasks) {
      const result = task.result;
      if (!result || !("latency" in result))
        throw new Error(`bench task "${task.name}" produced no statistics`);
      rows.push([
        maker.name,
        task.name,
        (result.latency.p50 * 1000).toFixed(1),
        (result.latency.p99 * 1000).toFixed(1),
      ]);
    }
    await close();
  }
  printTable(
    "harness.call overhead on a no-op keyed tool (µs per call)",
    ["store", "call", "p50", "p99"],
    rows,
  );
}
