import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresStore } from "../../src/postgres/index.js";
import { describeReport, runFailoverWorkload } from "../support/cluster/failover-workload.js";
import { type PgPair, startPgPair } from "../support/cluster/pg-standby.js";
import { type SwitchProxy, startSwitchProxy } from "../support/cluster/switch-proxy.js";

/**
 * The PostgreSQL primary SIGKILLed with harness calls and HTTP requests in flight, on a primary + streaming standby
 * of the test's own: the standby is promoted and a loopback proxy in front of the pair switches to it, as a DNS or
 * virtual-IP failover would; the store's `pg.Pool` reconnects through it.
 */
const leaseMs = 5_000;

for (const synchronous of [true, false]) {
  const mode = synchronous ? "synchronous" : "asynchronous";
  describe(`PostgreSQL failover, ${mode} replication`, () => {
    let pair: PgPair | undefined;
    let proxy: SwitchProxy | undefined;
    let pool: pg.Pool | undefined;
    beforeAll(async () => {
      pair = await startPgPair({ synchronous });
      proxy = await startSwitchProxy(pair.primaryPort);
    }, 120_000);
    afterAll(async () => {
      // The servers first: a pool whose queries still wait on a dead server ends once they fail.
      await proxy?.close();
      await pair?.stop();
      await pool?.end().catch(() => {});
    });

    it(`the primary SIGKILLed and the standby promoted mid-run: ${synchronous ? "no effect runs twice" : "keyed calls run again only with their key"}`, async () => {
      pool = new pg.Pool({
        host: "127.0.0.1",
        port: proxy!.port,
        user: "postgres",
        database: "test",
        max: 8,
        connectionTimeoutMillis: 5_000,
      });
      // Idle connections cut by the failover emit 'error' on the pool: the application's to handle.
      pool.on("error", () => {});
      const store = postgresStore(pool, { table: `idemkey_failover_${randomBytes(4).toString("hex")}` });
      let failoverMs = 0;
      const report = await runFailoverWorkload({
        store,
        leaseMs,
        fault: async () => {
          const started = Date.now();
          await pair!.killPrimary();
          await pair!.promote();
          proxy!.switchTo(pair!.standbyPort);
          failoverMs = Date.now() - started;
        },
      });
      console.log(`PostgreSQL ${mode}: failover took ${failoverMs} ms; ${describeReport(report)}`);
      // A synchronous standby has every commit the primary acknowledged, and the claim layer's retries carry every
      // completion and saved response across the failover: nothing runs twice. An asynchronous one may lack the last
      // few commits (a claim, a started mark, a save), and what they recorded is forgotten: the README's table says
      // so (keyed calls run again with their one key, which the workload checks; an unguarded tool or a handler
      // could too). Seen once in CI: one handler run again after its save was lost that way.
      if (synchronous) {
        expect(report.unguardedRepeats, describeReport(report)).toBe(0);
        expect(report.handlerRepeats, describeReport(report)).toBe(0);
        expect(report.completionsLost, describeReport(report)).toBe(0);
        expect(report.savesLost, describeReport(report)).toBe(0);
        expect(report.keyedRepeats, describeReport(report)).toBe(0);
      }
    }, 300_000);
  });
}
