import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import mysql from "mysql2/promise";
import { afterAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors/index.js";
import { mysqlStore } from "../../src/mysql/index.js";
import { frameworks } from "../owner/apps.js";
import {
  describeReport,
  expectNothingRepeated,
  runFailoverWorkload,
} from "../support/cluster/failover-workload.js";
import { privateMariaDb } from "../support/mariadb.js";

/**
 * MySQL's faults on a private MariaDB of this file's own (never the shared server on 3306): a deadlock the server
 * resolves by rolling the store's statement back, and the server killed (SIGKILL) in the middle of calls, then
 * started again on the same data directory.
 */
const server = await privateMariaDb();
const pool = mysql.createPool({ uri: server.url, connectionLimit: 8 });
/** The test's own connections: they hold locks, provoke the deadlock and read rows apart from the store. */
const admin = mysql.createPool({ uri: server.url, connectionLimit: 4 });

afterAll(async () => {
  await pool.end().catch(() => {});
  await admin.end().catch(() => {});
  await server.stop();
});

const input = (token: string, leaseMs = 60_000) => ({ fingerprint: "fp", token, leaseMs, ttlMs: 600_000 });

/**
 * Resolves once `count` statements whose text contains `text` are running on the server (with `atMost`, once no
 * more than `count` are): each is waiting on a lock, since alone it would be done at once. Polled, never slept on. (INNODB_TRX missed some waits in MariaDB 10.11.)
 */
async function lockWaits(count: number, text: string, atMost = false): Promise<void> {
  for (let i = 0; ; i++) {
    const [rows] = (await admin.query(
      "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query' AND ID <> CONNECTION_ID() AND INSTR(INFO, ?) > 0",
      [text],
    )) as unknown as [{ n: number }[]];
    if (atMost ? Number(rows[0]!.n) <= count : Number(rows[0]!.n) >= count) return;
    if (i > 4_000) throw new Error(`never saw ${count} statements with ${text} waiting`);
    await sleep(5);
  }
}

const deadlocks = async () => {
  const [rows] = (await admin.query("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")) as unknown as [
    { Value: string }[],
  ];
  return Number(rows[0]!.Value);
};

describe("MySQL deadlocks: the server's rollback is decided, and the store runs the statement again", () => {
  it("a claim chosen as a deadlock's victim (ER_LOCK_DEADLOCK) is run again and claims the key once", async () => {
    const store = mysqlStore(pool, { table: "deadlock" });
    await store.get("warm-up"); // the table exists before the locks are taken
    const key = `deadlock:${randomUUID()}`;
    const first = await admin.getConnection();
    const heavy = await admin.getConnection();
    try {
      // The classic deadlock of one key: a first insert holds it; the store's claim and a second transaction both
      // wait to insert it; the first rolls back, and each waiter holds a shared lock the other needs. InnoDB rolls
      // back the lighter one: the heavy transaction has written 200 rows first, so the victim is the store's claim.
      await first.query("START TRANSACTION");
      await first.query(
        "INSERT INTO deadlock (`key`, state, fingerprint, attempts, created_at, updated_at, expires_at) VALUES (?, 'pending', 'x', 0, 0, 0, 0)",
        [Buffer.from(key)],
      );
      const claiming = store.claim(key, input("store"));
      claiming.catch(() => {});
      await lockWaits(1, "INSERT INTO `deadlock`");
      await heavy.query("CREATE TEMPORARY TABLE ballast (n INT) ENGINE=InnoDB");
      await heavy.query("START TRANSACTION");
      await heavy.query(
        `INSERT INTO ballast (n) VALUES ${Array.from({ length: 200 }, (_, i) => `(${i})`).join(", ")}`,
      );
      const before = await deadlocks();
      const heavyInsert = heavy.query(
        "INSERT INTO deadlock (`key`, state, fingerprint, attempts, created_at, updated_at, expires_at) VALUES (?, 'pending', 'y', 0, 0, 0, 0)",
        [Buffer.from(key)],
      );
      heavyInsert.catch(() => {});
      await lockWaits(1, "INSERT INTO deadlock (");
      await first.query("ROLLBACK");
      // The heavy transaction survives the deadlock with the key inserted; the store's claim, run again, waits on it.
      await heavyInsert;
      expect(await deadlocks()).toBe(before + 1);
      await lockWaits(1, "INSERT INTO `deadlock`");
      await heavy.query("ROLLBACK");
      const claimed = await claiming;
      expect(claimed.status).toBe("claimed");
      expect(claimed.record.token).toBe("store");
      const [rows] = (await admin.query("SELECT token FROM deadlock WHERE `key` = ?", [
        Buffer.from(key),
      ])) as [{ token: Buffer }[], unknown];
      expect(rows.map((r) => String(r.token))).toEqual(["store"]);
    } finally {
      await first.query("ROLLBACK").catch(() => {});
      await heavy.query("ROLLBACK").catch(() => {});
      first.release();
      heavy.release();
    }
  });

  it("an update whose lock wait timed out (ER_LOCK_WAIT_TIMEOUT) is run again once the lock is free", async () => {
    const store = mysqlStore(pool, { table: "lock_wait" });
    const key = `wait:${randomUUID()}`;
    const { record } = await store.claim(key, input("holder"));
    const locker = await admin.getConnection();
    try {
      await locker.query("START TRANSACTION");
      await locker.query("SELECT 1 FROM lock_wait WHERE `key` = ? FOR UPDATE", [Buffer.from(key)]);
      // The store's own connections give up a lock wait after 1 s, so that the timeout comes quickly.
      const timeouts = mysql.createPool({ uri: server.url, connectionLimit: 2 });
      timeouts.on("connection", (c) => c.query("SET SESSION innodb_lock_wait_timeout = 1"));
      const quick = mysqlStore(timeouts, { table: "lock_wait" });
      try {
        const completing = quick.update(
          key,
          { token: record.token! },
          { state: "completed", result: '"done"' },
        );
        completing.catch(() => {});
        await lockWaits(1, "LEFT JOIN `lock_wait`");
        // The first wait times out (the statement leaves the process list) and the store sends it again.
        await lockWaits(0, "LEFT JOIN `lock_wait`", true);
        await lockWaits(1, "LEFT JOIN `lock_wait`");
        await locker.query("ROLLBACK");
        expect(await completing).toMatchObject({ state: "completed", result: '"done"' });
      } finally {
        await timeouts.end();
      }
    } finally {
      await locker.query("ROLLBACK").catch(() => {});
      locker.release();
    }
  });
});

describe("MySQL killed mid-call and restarted", () => {
  it("a completion in flight when the server dies fails with StoreError, commits nothing, and the next call goes through", async () => {
    const store = mysqlStore(pool, { table: "killed" });
    const key = `killed:${randomUUID()}`;
    const { record } = await store.claim(key, input("holder"));
    const locker = await admin.getConnection();
    await locker.query("START TRANSACTION");
    await locker.query("SELECT 1 FROM killed WHERE `key` = ? FOR UPDATE", [Buffer.from(key)]);
    const completing = store.update(key, { token: record.token! }, { state: "completed", result: '"done"' });
    completing.catch(() => {});
    await lockWaits(1, "LEFT JOIN `killed`");
    await server.kill();
    const error = await completing.catch((e: unknown) => e);
    locker.destroy();
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ store: "mysql", operation: "update", key, retryable: true });
    expect((error as Error).message).toMatch(/It may or may not have been applied/);
    await server.start();
    // Read apart from the store: the row does not claim completion.
    const [rows] = (await admin.query("SELECT state, result FROM killed WHERE `key` = ?", [
      Buffer.from(key),
    ])) as [{ state: string; result: Buffer | null }[], unknown];
    expect(rows).toEqual([{ state: "pending", result: null }]);
    expect(
      await store.update(key, { token: record.token! }, { state: "completed", result: '"done"' }),
    ).toMatchObject({ state: "completed", result: '"done"' });
  });

  it("no handler or unguarded tool runs twice across a SIGKILL and restart; unknowns surface; nothing is lost", async () => {
    const leaseMs = 4_000;
    const store = mysqlStore(pool, { table: "restart" });
    let outageMs = 0;
    const report = await runFailoverWorkload({
      store,
      leaseMs,
      frameworks,
      // One call of each tool and one request of each framework mid-effect when the server dies: they finish
      // while it is down, so their completions and saves must be retried across the outage.
      holdInFlight: true,
      fault: async ({ release }) => {
        const started = Date.now();
        await server.kill();
        release();
        await sleep(leaseMs);
        await server.start();
        outageMs = Date.now() - started;
      },
    });
    console.log(`MariaDB SIGKILL and restart: down ${outageMs} ms; ${describeReport(report)}`);
    expectNothingRepeated(report);
    expect(report.failures.size, describeReport(report)).toBeGreaterThan(0);
    for (const framework of frameworks) {
      const runs = [...report.handler.keys()].filter((k) => k.startsWith(`${framework.name}:`));
      expect(runs.length, framework.name).toBeGreaterThan(0);
    }
  }, 300_000);
});
