import mysql from "mysql2/promise";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness, defineTool, OutcomeUnknownError } from "../../src/index.js";
import { mysqlStore } from "../../src/mysql/index.js";
import { createReconciler, type SweepReport } from "../../src/reconciler/index.js";
import { privateMariaDb } from "../support/mariadb.js";

// Two reconcilers on one MySQL ledger (a private MariaDB of this file's own), as in postgres.test.ts: each record
// decided once. The questions are counted in a side table the reconcile callback writes, never through idemkey.
const server = await privateMariaDb();
// One pool per reconciler, as two processes would have, and one for the test's own counting.
const pools = [0, 1].map(() => mysql.createPool({ uri: server.url, connectionLimit: 4 }));
const admin = mysql.createPool({ uri: server.url, connectionLimit: 2 });

const COUNT = 40;

describe("two reconcilers on one MySQL store", () => {
  afterAll(async () => {
    await admin.end();
    for (const pool of pools) await pool.end();
    await server.stop();
  });

  it("decide each record exactly once: one reconcile call and one decision in its audit trail", async () => {
    await admin.query("CREATE TABLE calls (`key` VARCHAR(255) NOT NULL, `by` VARCHAR(16) NOT NULL)");
    const store = mysqlStore(pools[0]!, { table: "records" });
    const harness = createHarness({ store, retry: { retries: 0 } });
    const lost = defineTool<{ n: number }, unknown>({
      name: "transfer",
      effect: "unguarded",
      run: () => {
        throw new Error("socket hang up");
      },
    });
    const keys: string[] = [];
    for (let n = 0; n < COUNT; n++) {
      await expect(harness.call("task", lost, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
      keys.push(harness.key("task", lost, { n }));
    }
    // A quarter as a crashed process leaves them: pending under a dead token, started, its lease lapsed.
    for (const key of keys.slice(0, COUNT / 4)) {
      const moved = await store.update(
        `call:${key}`,
        { state: "outcome_unknown" },
        { state: "pending", token: "dead", leaseMs: 0 },
      );
      expect(moved?.state).toBe("pending");
    }

    const reconcilers = pools.map((pool, i) => {
      const by = `rec-${i}`;
      const tool = defineTool<{ n: number }, unknown>({
        name: "transfer",
        effect: "unguarded",
        run: () => undefined,
        reconcile: async (args, ctx) => {
          // The side record of every question asked, written by the question itself.
          await pool.query("INSERT INTO calls (`key`, `by`) VALUES (?, ?)", [ctx.idempotencyKey, by]);
          return args.n % 3 === 0 ? { status: "not_done" } : { status: "done", result: { n: args.n } };
        },
      });
      return createReconciler({
        store: mysqlStore(pool, { table: "records" }),
        tools: [tool],
        id: by,
        concurrency: 4,
        pageSize: 7,
      });
    });
    const reports: SweepReport[] = await Promise.all(reconcilers.map((r) => r.sweep()));

    const [asked] = (await admin.query(
      "SELECT `key`, COUNT(*) AS n FROM calls GROUP BY `key`",
    )) as unknown as [{ key: string; n: number }[]];
    expect(asked).toHaveLength(COUNT);
    expect(asked.every((row) => Number(row.n) === 1)).toBe(true);
    expect(new Set(asked.map((row) => row.key))).toEqual(new Set(keys));

    for (const [n, key] of keys.entries()) {
      const entry = (await harness.get(key))!;
      expect(entry.state).toBe(n % 3 === 0 ? "approved" : "completed");
      const decisions = entry.events.filter((e) => e.type === "resolved");
      expect(decisions).toHaveLength(1);
    }
    const decided = reports.reduce((sum, r) => sum + r.done + r.notDone, 0);
    expect(decided).toBe(COUNT);
    expect(reports.reduce((sum, r) => sum + r.failed + r.undecided, 0)).toBe(0);
    // Both took part (each sweep starts on the same first page, so the race is real).
    expect(reports.every((r) => r.examined > 0)).toBe(true);
  });
});
