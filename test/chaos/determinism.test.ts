import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type ChaosReport, runChaos } from "../../demo/run.js";
import { sqliteStore } from "../../src/sqlite/index.js";

/**
 * The demo's promise that a seed replays a run: the same seed twice gives the same faults and the same numbers in
 * every mode, whatever the machine's load. Only the wall times differ, and they are left out of the comparison.
 */
const dir = mkdtempSync(join(tmpdir(), "idemkey-determinism-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MODE_LIMIT_MS = 180_000;
const withoutTimes = (report: ChaosReport) => ({
  ...report,
  kept: undefined,
  modes: report.modes.map(({ wallMs: _, ...mode }) => mode),
});

describe("one seed, run twice", () => {
  // Two runs of three modes, each mode bounded by runChaos's own limit: the budget is that work.
  it("prints the same report, and --keep leaves a parked approval and an unknown outcome", {
    timeout: 6 * MODE_LIMIT_MS,
  }, async () => {
    const options = { tasks: 24, seed: 7, workers: 3, timeoutMs: MODE_LIMIT_MS };
    const first = await runChaos({ ...options, keep: join(dir, "kept") });
    const second = await runChaos(options);
    expect(withoutTimes(second)).toEqual(withoutTimes(first));
    // The faults bit in this slice (otherwise equality would prove little).
    expect(first.modes[0]!.crashes).toBeGreaterThan(0);
    expect(first.modes.some((m) => m.owners.some((o) => o.duplicates > 0))).toBe(true);

    const store = sqliteStore(first.kept!);
    try {
      const states = (await store.list({ prefix: "call:" })).map((r) => r.state);
      expect(states).toContain("awaiting_approval");
      expect(states).toContain("outcome_unknown");
    } finally {
      await store.close();
    }
  });
});
