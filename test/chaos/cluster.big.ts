import { randomInt } from "node:crypto";
import { describe, it } from "vitest";
import { type LedgerOption, runChaos } from "../../demo/run.js";
import { startPgPair } from "../support/cluster/pg-standby.js";
import { startRedisCluster } from "../support/cluster/redis-cluster.js";
import { startSwitchProxy } from "../support/cluster/switch-proxy.js";
import { expectExactlyOnce, expectFaultsExercised } from "./expect-once.js";

/**
 * The chaos suite's cluster mode (part of `npm run test:chaos`): the same seeded run as chaos.big.ts, its ledger on
 * servers of the run's own, failed over once the idemkey mode is a third of the way through: a Redis Cluster whose
 * store master is SIGKILLed (its replica takes over), and a PostgreSQL primary SIGKILLed with its synchronous standby
 * promoted behind a switching proxy. The same report and the same expectations: every effect once, every unknown
 * outcome surfaced. `IDEMKEY_CHAOS_SEED` replays.
 */
const seed = process.env.IDEMKEY_CHAOS_SEED ? Number(process.env.IDEMKEY_CHAOS_SEED) : randomInt(2 ** 31);
const tasks = Number(process.env.IDEMKEY_CHAOS_TASKS ?? 500);
const workers = Number(process.env.IDEMKEY_CHAOS_WORKERS ?? 3);
console.log(
  `chaos cluster mode: seed ${seed}, ${tasks} tasks (replay with IDEMKEY_CHAOS_SEED=${seed} npm run test:chaos)`,
);

interface Setup {
  ledger: LedgerOption;
  /** The failover, run once while the idemkey mode is under way. */
  fault(): Promise<string>;
  stop(): Promise<void>;
}

const setups: Record<string, () => Promise<Setup>> = {
  "Redis Cluster, a master SIGKILLed": async () => {
    const cluster = await startRedisCluster();
    const nodes = cluster.seeds.map((s) => `redis://${s.host}:${s.port}`);
    return {
      // Every chaos prefix is `{idemkey-chaos-<id>}:`; the fault kills whichever master holds the run's slot.
      ledger: { kind: "redis", url: nodes[0]!, cluster: nodes },
      async fault() {
        const keys = (await Promise.all(cluster.live().map((n) => n.admin.keys("{idemkey-chaos-*")))).flat();
        const slot = await cluster.slotOf(keys[0] ?? "{idemkey-chaos-}");
        const master = await cluster.masterOf(slot);
        const started = Date.now();
        await cluster.kill(master);
        await cluster.awaitFailover(slot, master);
        return `master ${master.port} of slot ${slot} killed, replica took over in ${Date.now() - started} ms`;
      },
      stop: () => cluster.stop(),
    };
  },
  "PostgreSQL, the primary SIGKILLed and the synchronous standby promoted": async () => {
    const pair = await startPgPair({ synchronous: true });
    const proxy = await startSwitchProxy(pair.primaryPort);
    return {
      ledger: { kind: "postgres", url: `postgres://postgres@127.0.0.1:${proxy.port}/test` },
      async fault() {
        const started = Date.now();
        await pair.killPrimary();
        await pair.promote();
        proxy.switchTo(pair.standbyPort);
        return `primary killed, standby promoted in ${Date.now() - started} ms`;
      },
      async stop() {
        await proxy.close();
        await pair.stop();
      },
    };
  },
};

describe(`chaos, cluster mode: ${tasks} tasks per ledger, seed ${seed}`, () => {
  for (const [name, setup] of Object.entries(setups)) {
    it(`${name}: every effect once, every unknown outcome surfaced`, async () => {
      const servers = await setup();
      let fault: Promise<string> | undefined;
      try {
        const report = await runChaos({
          tasks,
          seed,
          workers,
          modes: ["idemkey"],
          ledger: servers.ledger,
          timeoutMs: 1_500_000,
          onProgress: ({ done, total }) => {
            if (fault === undefined && done >= total / 3) fault = servers.fault();
          },
        });
        const mode = report.modes[0]!;
        console.log(
          `${name}: ${fault ? await fault : "no failover (the run ended first)"}; ${mode.crashes} workers killed, ` +
            `${mode.owners.reduce((a, o) => a + o.unknownSurfaced, 0)} unknown outcomes surfaced, ` +
            `${mode.owners.reduce((a, o) => a + o.replays, 0)} owner replays, ${(mode.wallMs / 1000).toFixed(1)} s`,
        );
        if (fault === undefined)
          throw new Error("the run ended before the failover; raise IDEMKEY_CHAOS_TASKS");
        expectExactlyOnce(report);
        expectFaultsExercised(report, tasks >= 500);
      } finally {
        await fault?.catch(() => {});
        await servers.stop();
      }
    });
  }
});
