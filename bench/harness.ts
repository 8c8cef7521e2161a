import { createHarness, defineTool } from "../src/harness/index.js";
import { inRounds } from "./rounds.js";
import { openStore, STORE_NAMES } from "./stores.js";
import { printTable } from "./table.js";

export const noop = defineTool({
  name: "noop",
  effect: "keyed",
  run: async (args: { n: number }) => ({ ok: args.n }),
});

/** Targets at p50 for a fresh key, in microseconds (issue 3); the server stores have none. */
const TARGETS: Record<string, number> = { memory: 10, "SQLite file": 100 };

/**
 * What `harness.call` adds to a no-op `keyed` tool on each store: a fresh key (claim, run, complete: two store
 * writes) and a replay of a completed key (one claim that finds it), beside the bare tool.
 */
export async function benchHarness(): Promise<void> {
  const rows: string[][] = [];
  for (const name of STORE_NAMES) {
    const opened = await openStore(name);
    if (opened === undefined) continue;
    const harness = createHarness({ store: opened.store });
    let fresh = 0;
    let replay = 0;
    const REPLAYS = 1000;
    for (let i = 0; i < REPLAYS; i++) await harness.call("bench-replay", noop, { n: i });
    const latency = await inRounds({
      "bare tool": () => noop.run({ n: fresh }, undefined as never),
      "fresh key": () => harness.call("bench-fresh", noop, { n: fresh++ }),
      replay: () => harness.call("bench-replay", noop, { n: replay++ % REPLAYS }),
    });
    for (const [call, l] of latency) {
      const target = call === "fresh key" ? TARGETS[name] : undefined;
      const verdict = target === undefined ? "" : `< ${target}: ${l.p50 < target ? "met" : "NOT met"}`;
      rows.push([name, call, l.p50.toFixed(1), l.p99.toFixed(1), String(l.count), verdict]);
    }
    await opened.close();
  }
  printTable(
    "harness.call overhead on a no-op keyed tool (µs per call)",
    ["store", "call", "p50", "p99", "calls", "target p50"],
    rows,
  );
}
