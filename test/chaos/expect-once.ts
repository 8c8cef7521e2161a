import { expect } from "vitest";
import type { ChaosReport, LedgerOption } from "../../demo/run.js";
import { KillPoint } from "../../demo/schedule.js";

/**
 * What idemkey's mode must show, counted at the owners: every expected effect exactly once, no silent repeat of the
 * unguarded email, every ambiguous email failure surfaced as OutcomeUnknownError, and no failed task. Each message
 * carries the seed, so a failure can be replayed.
 */
export function expectExactlyOnce(report: ChaosReport): void {
  const replay = `seed ${report.seed}; replay with IDEMKEY_CHAOS_SEED=${report.seed} or: ${report.replay}`;
  const mode = report.modes.find((m) => m.mode === "idemkey");
  expect(mode, replay).toBeDefined();
  for (const m of report.modes) expect(m.failures, `${m.mode}: ${replay}`).toEqual([]);
  for (const owner of mode!.owners) {
    expect(owner.duplicates, `duplicates at the ${owner.owner}; ${replay}`).toBe(0);
    expect(owner.missing, `missing effects at the ${owner.owner}; ${replay}`).toBe(0);
    expect(owner.observed, `effects at the ${owner.owner}; ${replay}`).toBe(owner.expected);
    expect(owner.silentRepeats, `silent repeats at the ${owner.owner}; ${replay}`).toBe(0);
  }
  expect(mode!.unsurfaced, `unknown outcomes never surfaced; ${replay}`).toEqual([]);
  expect(report.problems, replay).toEqual([]);
  expect(report.ok, replay).toBe(true);
}

/** The faults really happened in idemkey's mode: kills, lost answers, 503s, unknown outcomes and owner replays. */
export function expectFaultsExercised(report: ChaosReport, everyPoint: boolean): void {
  const mode = report.modes.find((m) => m.mode === "idemkey")!;
  const replay = `seed ${report.seed}`;
  expect(mode.crashes, replay).toBeGreaterThan(0);
  expect(mode.faults.net["lost-response"], replay).toBeGreaterThan(0);
  expect(mode.faults.net["5xx"], replay).toBeGreaterThan(0);
  const email = mode.owners.find((o) => o.effect === "unguarded")!;
  expect(email.unknownSurfaced, replay).toBeGreaterThan(0);
  expect(
    mode.owners.filter((o) => o.effect === "keyed").reduce((a, o) => a + o.replays, 0),
    replay,
  ).toBeGreaterThan(0);
  if (!everyPoint) return;
  for (const point of Object.values(KillPoint)) {
    for (const tool of ["sendMessage", "openPullRequest", "createCharge"]) {
      expect(mode.faults.kills[point][tool] ?? 0, `kills ${point} in ${tool}; ${replay}`).toBeGreaterThan(0);
    }
  }
}

/** The store-fault mode really broke the ledger: the proxy's faults for a server, lock holds for SQLite. */
export function expectStoreFaults(report: ChaosReport, ledger: LedgerOption): void {
  const f = report.storeFaults;
  const replay = `seed ${report.seed}`;
  expect(f, replay).toBeDefined();
  if (ledger === "sqlite") {
    expect(f!.lock, replay).toBeGreaterThan(0);
  } else {
    expect(f!.reset, replay).toBeGreaterThan(0);
    expect(f!.stall, replay).toBeGreaterThan(0);
    expect(f!.drop, replay).toBeGreaterThan(0);
  }
}
