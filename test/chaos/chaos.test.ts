import { describe, expect, it } from "vitest";
import { runChaos } from "../../demo/run.js";
import { expectExactlyOnce, expectFaultsExercised, expectStoreFaults } from "./expect-once.js";

/**
 * The slice of the chaos suite that runs in `npm test`: the demo's machinery as a library, 40 tasks on SQLite,
 * naive retries beside idemkey under the same seeded faults. The naive run is the control: it proves the faults
 * bite (every window duplicates something), so that idemkey's zero means something. The big run is
 * `npm run test:chaos`.
 */
const seed = Number(process.env.IDEMKEY_CHAOS_SEED ?? 7);

describe("chaos slice: 40 tasks, SQLite ledger", () => {
  it("duplicates through every window without a key, and never with idemkey", async () => {
    console.log(`chaos slice: seed ${seed} (replay with IDEMKEY_CHAOS_SEED=${seed})`);
    const report = await runChaos({ tasks: 40, seed, workers: 3, modes: ["naive", "idemkey"] });
    const naive = report.modes.find((m) => m.mode === "naive")!;
    const sum = (f: (o: (typeof naive.owners)[number]) => number) =>
      naive.owners.reduce((a, o) => a + f(o), 0);
    expect(
      sum((o) => o.duplicates),
      `seed ${seed}`,
    ).toBeGreaterThan(0);
    expect(
      sum((o) => o.causes.retry),
      `seed ${seed}`,
    ).toBeGreaterThan(0);
    expect(
      sum((o) => o.causes.replay),
      `seed ${seed}`,
    ).toBeGreaterThan(0);
    expect(
      sum((o) => o.causes.concurrent),
      `seed ${seed}`,
    ).toBeGreaterThan(0);
    expect(naive.owners.find((o) => o.effect === "unguarded")!.silentRepeats, `seed ${seed}`).toBeGreaterThan(
      0,
    );

    expectExactlyOnce(report);
    expectFaultsExercised(report, false);
  }, 180_000);
});

describe("chaos slice, store-fault mode: 20 tasks, SQLite ledger whose write lock another connection holds", () => {
  it("never duplicates while the ledger is held up", async () => {
    const report = await runChaos({ tasks: 20, seed, workers: 3, modes: ["idemkey"], storeFaults: true });
    expectExactlyOnce(report);
    expectStoreFaults(report, "sqlite");
  }, 180_000);
});
