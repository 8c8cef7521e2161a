import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresStore } from "../../src/postgres/index.js";
import { frameworks } from "../owner/apps.js";
import {
  describeReport,
  expectNothingRepeated,
  runFailoverWorkload,
} from "../support/cluster/failover-workload.js";
import { type PgPair, startPgPair } from "../support/cluster/pg-standby.js";
import { idemkeyWarnings } from "../support/warnings.js";

/**
 * Issue 11 on a PostgreSQL server of the test's own (initdb + pg_ctl under a temporary directory, as the postgres
 * user when root; its standby is not used): stopped with `-m immediate` while harness calls (keyed and unguarded)
 * and requests through the Express, Hono and Fastify middleware are in flight, down for a lease, then started again.
 * A restart loses no acknowledged commit, so nothing may run twice: every completion and saved response is retried
 * across the outage. The pool has no 'error' listener of the application's: the store's own keeps the process up.
 */
const leaseMs = 4_000;

describe("PostgreSQL stopped with -m immediate and restarted mid-flight", () => {
  let pair: PgPair | undefined;
  let pool: pg.Pool | undefined;
  beforeAll(async () => {
    pair = await startPgPair({ synchronous: false });
  }, 120_000);
  afterAll(async () => {
    // The pool first: stopping the servers under its idle connections would warn of each as it dies.
    await pool?.end().catch(() => {});
    await pair?.stop();
  });

  it("no handler or unguarded tool runs twice, no save or completion is lost, the process stays up", async () => {
    pool = new pg.Pool({
      host: "127.0.0.1",
      port: pair!.primaryPort,
      user: "postgres",
      database: "test",
      max: 8,
      connectionTimeoutMillis: 5_000,
    });
    const store = postgresStore(pool, { table: `idemkey_restart_${randomBytes(4).toString("hex")}` });
    // The store's listener, and no other: an idle connection cut by the restart would otherwise crash the process.
    expect(pool.listenerCount("error")).toBe(1);
    const warnings = idemkeyWarnings();
    let outageMs = 0;
    const report = await runFailoverWorkload({
      store,
      leaseMs,
      frameworks,
      // One call of each tool and one request of each framework mid-effect when the server stops: they finish
      // while it is down, so their completions and saves must be retried across the outage.
      holdInFlight: true,
      fault: async ({ release }) => {
        const started = Date.now();
        await pair!.stopPrimary();
        release();
        // Down for a whole lease: renewals fail and leases lapse; the must-happen writes keep trying.
        await sleep(leaseMs);
        await pair!.startPrimary();
        outageMs = Date.now() - started;
      },
    });
    console.log(`PostgreSQL restart: down ${outageMs} ms; ${describeReport(report)}`);
    expect(outageMs).toBeGreaterThanOrEqual(leaseMs);
    expectNothingRepeated(report);
    // The outage was felt: calls in flight failed or waited, and each framework's handler ran for every id.
    for (const framework of frameworks) {
      const runs = [...report.handler.keys()].filter((k) => k.startsWith(`${framework.name}:`));
      expect(runs.length, framework.name).toBeGreaterThan(0);
    }
    expect(report.failures.size, describeReport(report)).toBeGreaterThan(0);
    // Idle connections the restart cut (if any were idle) were reported as a warning the application can hear,
    // not a crash; nothing else was.
    const seen = await warnings.stop();
    for (const message of seen) expect(message).toMatch(/idle connection of the pool failed/);
  }, 300_000);
});
