import { randomBytes, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, describe, expect, it, vi } from "vitest";
import { postgresStore } from "../../src/postgres/index.js";
import { faultProxy } from "../support/fault-proxy.js";
import { pausedUnderLoad } from "../support/paused-under-load.js";
import { postgresService } from "../support/services.js";
import { idemkeyWarnings } from "../support/warnings.js";

/**
 * Issue 11 cases 3 and 6 on the shared PostgreSQL, in a table of this run's own: the server is only queried (and this
 * test's own backends terminated), never stopped or reconfigured.
 */
const service = await postgresService();
const table = `idemkey_test_clock_${randomBytes(4).toString("hex")}`;
const admin = new pg.Pool({ connectionString: service.url, max: 2 });
const pools: pg.Pool[] = [];

afterAll(async () => {
  if (!service.skip) {
    await admin.query(`DROP TABLE IF EXISTS "${table}"`);
    await admin.query("DELETE FROM idemkey_meta WHERE name = $1", [table]);
  }
  for (const pool of pools) await pool.end().catch(() => {});
  await admin.end();
});

(service.skip ? describe.skip : describe)("PostgreSQL: the store's clock and the pool's errors", () => {
  it("case 3: a process whose clock runs ten leases ahead cannot take over a live lease", async () => {
    const pool = new pg.Pool({ connectionString: service.url, max: 2 });
    pools.push(pool);
    const store = postgresStore(pool, { table });
    const key = `skew:${randomUUID()}`;
    const first = await store.claim(key, { fingerprint: "fp", token: "a", leaseMs: 2_000, ttlMs: 60_000 });
    expect(first.status).toBe("claimed");
    const realNow = Date.now.bind(Date);
    // The skewed process: its store is made while its clock runs ahead, as it would be in that process.
    const spy = vi.spyOn(Date, "now").mockImplementation(() => realNow() + 20_000);
    try {
      const skewed = postgresStore(pool, { table });
      const second = await skewed.claim(key, {
        fingerprint: "fp",
        token: "b",
        leaseMs: 2_000,
        ttlMs: 60_000,
      });
      expect(second.status).toBe("exists");
      const renewed = await skewed.update(key, { token: "a", state: "pending" }, { leaseMs: 2_000 });
      expect(renewed!.leaseUntil! - realNow()).toBeLessThan(10_000);
    } finally {
      spy.mockRestore();
    }
  });

  it("case 6: an idle connection of the pool dying (a restart, a terminated backend) does not crash the process", async () => {
    const pool = new pg.Pool({ connectionString: service.url, max: 1 });
    pools.push(pool);
    const store = postgresStore(pool, { table });
    expect(pool.listenerCount("error")).toBe(1);
    const key = `pool:${randomUUID()}`;
    await store.claim(key, { fingerprint: "fp", token: "a", leaseMs: 2_000, ttlMs: 60_000 });
    const { rows } = await pool.query("SELECT pg_backend_pid() AS pid");
    // Heard here as an application would hear it, instead of printed on a passing run.
    const warnings = idemkeyWarnings();
    const warned = new Promise<void>((resolve) => {
      const onWarning = (warning: Error) => {
        if (/idle connection of the pool failed/.test(warning.message)) {
          process.off("warning", onWarning);
          resolve();
        }
      };
      process.on("warning", onWarning);
    });
    await admin.query("SELECT pg_terminate_backend($1)", [rows[0].pid]);
    await warned;
    await sleep(10);
    expect((await store.get(key))?.token).toBe("a");
    expect(await warnings.stop()).toEqual([expect.stringMatching(/idle connection of the pool failed/)]);
  });

  it("leaves a pool's own error listener alone", () => {
    const pool = new pg.Pool({ connectionString: service.url });
    pools.push(pool);
    pool.on("error", () => {});
    postgresStore(pool, { table });
    expect(pool.listenerCount("error")).toBe(1);
  });
});

/**
 * Issue 43, case 7 on PostgreSQL. The shared server is never paused: the test's TCP proxy holds all traffic between
 * the first server process's pool and PostgreSQL for 3 s (longer than the lease), as a pause or a partition would,
 * while the retries reach a second process whose pool connects directly. On one pool PostgreSQL runs the queued
 * statements of many connections at once, so the holder's renewal, sent before the pause, would always beat the
 * retry's takeover; the second process is how a retry takes a key over while its holder cannot reach the store.
 */
(service.skip ? describe.skip : describe)(
  "issue 43, case 7: PostgreSQL out of the holder's reach for 3 s under load",
  () => {
    it("leaves no key unknown whose handler finished, and runs no handler twice", async () => {
      const url = new URL(service.url);
      const proxy = await faultProxy(Number(url.port || 5432), url.hostname);
      const proxied = new URL(service.url);
      proxied.hostname = "127.0.0.1";
      proxied.port = String(proxy.port);
      const holderPool = new pg.Pool({ connectionString: proxied.toString(), max: 10 });
      const retryPool = new pg.Pool({ connectionString: service.url, max: 10 });
      pools.push(retryPool); // the holder's pool is ended below, before its proxy closes
      try {
        const store = postgresStore(holderPool, { table });
        const retryStore = postgresStore(retryPool, { table });
        await store.get("warm-up"); // the table made before the load
        await retryStore.get("warm-up");
        const run = await pausedUnderLoad({
          store,
          retryStore,
          leaseMs: 2_000,
          pauseMs: 3_000,
          pause: () => proxy.stall(),
          resume: () => proxy.resume(),
        });
        expect(run.answeredUnknown).toBeGreaterThan(0);
        expect(run.finished).toBe(run.keys.length);
        expect(run.leftUnknown, `${run.leftUnknown.length} of ${run.keys.length} keys left unknown`).toEqual(
          [],
        );
        expect(run.wrongReplays).toEqual([]);
        expect(run.effects.filter(([, count]) => count !== 1)).toEqual([]);
        expect(run.otherErrors).toEqual([]);
      } finally {
        await holderPool.end().catch(() => {});
        await proxy.close();
      }
    });
  },
);
