import { randomInt } from "node:crypto";
import { describe, it } from "vitest";
import { type LedgerOption, runChaos } from "../../demo/run.js";
import { postgresService, redisService } from "../support/services.js";
import { expectExactlyOnce, expectFaultsExercised, expectStoreFaults } from "./expect-once.js";

/**
 * The chaos suite (`npm run test:chaos`): at least 500 tasks per ledger in idemkey's mode, with workers killed at
 * every injection point of every tool, lost answers, 503s and concurrent duplicates, on SQLite and, where the
 * servers answer, PostgreSQL and Redis. A new seed each run explores new schedules; it is printed first, and every
 * failure message repeats it: `IDEMKEY_CHAOS_SEED=<seed> npm run test:chaos` replays the run. The store-fault mode
 * runs the same tasks and seeds again while the ledger itself is broken (see `runChaos`'s `storeFaults`).
 */
const seed = process.env.IDEMKEY_CHAOS_SEED ? Number(process.env.IDEMKEY_CHAOS_SEED) : randomInt(2 ** 31);
const tasks = Number(process.env.IDEMKEY_CHAOS_TASKS ?? 500);
const workers = Number(process.env.IDEMKEY_CHAOS_WORKERS ?? 3);
console.log(
  `chaos: seed ${seed}, ${tasks} tasks, ${workers} workers (replay with IDEMKEY_CHAOS_SEED=${seed} npm run test:chaos)`,
);

const [pg, redis] = await Promise.all([postgresService(), redisService()]);

const ledgers: { name: string; ledger: LedgerOption; skip: string | undefined }[] = [
  { name: "SQLite", ledger: "sqlite", skip: undefined },
  { name: "PostgreSQL", ledger: { kind: "postgres", url: pg.url }, skip: pg.skip },
  { name: "Redis", ledger: { kind: "redis", url: redis.url }, skip: redis.skip },
];

describe(`chaos: ${tasks} tasks per ledger, seed ${seed}`, () => {
  for (const { name, ledger, skip } of ledgers) {
    it.skipIf(skip !== undefined)(
      `${name} ledger: every effect once, every unknown outcome surfaced`,
      async () => {
        const report = await runChaos({
          tasks,
          seed,
          workers,
          modes: ["idemkey"],
          ledger,
          timeoutMs: 1_500_000,
        });
        const mode = report.modes[0]!;
        console.log(
          `${name}: ${mode.crashes} workers killed, ${mode.faults.net["lost-response"]} answers lost, ` +
            `${mode.faults.net["5xx"]} × 503, ${mode.faults.concurrent} concurrent copies, ` +
            `${mode.owners.reduce((a, o) => a + o.unknownSurfaced, 0)} unknown outcomes surfaced, ` +
            `${mode.owners.reduce((a, o) => a + o.replays, 0)} owner replays, ${(mode.wallMs / 1000).toFixed(1)} s`,
        );
        expectExactlyOnce(report);
        expectFaultsExercised(report, true);
      },
    );
  }
});

describe(`chaos, store-fault mode: ${tasks} tasks per ledger, seed ${seed}`, () => {
  for (const { name, ledger, skip } of ledgers) {
    it.skipIf(skip !== undefined)(
      `${name} ledger broken while it runs: every effect once, every unknown outcome surfaced`,
      async () => {
        const report = await runChaos({
          tasks,
          seed,
          workers,
          modes: ["idemkey"],
          ledger,
          storeFaults: true,
          timeoutMs: 1_500_000,
        });
        const mode = report.modes[0]!;
        const f = report.storeFaults!;
        console.log(
          `${name} (store faults): ${f.reset} resets, ${f.stall} stalls, ${f.drop} replies dropped, ${f.lock} lock ` +
            `holds; ${mode.crashes} workers killed, ` +
            `${mode.owners.reduce((a, o) => a + o.duplicates, 0)} duplicate effects, ` +
            `${mode.owners.reduce((a, o) => a + o.silentRepeats, 0)} silent repeats, ` +
            `${mode.owners.reduce((a, o) => a + o.unknownSurfaced, 0)} unknown outcomes surfaced, ` +
            `${(mode.wallMs / 1000).toFixed(1)} s`,
        );
        expectExactlyOnce(report);
        expectStoreFaults(report, ledger);
      },
    );
  }
});
