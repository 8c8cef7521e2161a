import mysql from "mysql2/promise";
import { afterAll, describe, it } from "vitest";
import { mysqlStore } from "../../src/mysql/index.js";
import { privateMariaDb } from "../support/mariadb.js";
import { twoReconcilersDecideOnce } from "./two-reconcilers-scenario.js";

// Two reconcilers on one MySQL ledger (a private MariaDB of this file's own), as in postgres.test.ts: each record
// decided once. The questions are counted in a side table the reconcile callback writes, never through idemkey.
const server = await privateMariaDb();
// One pool per reconciler, as two processes would have, and one for the test's own counting.
const pools = [0, 1].map(() => mysql.createPool({ uri: server.url, connectionLimit: 4 }));
const admin = mysql.createPool({ uri: server.url, connectionLimit: 2 });

describe("two reconcilers on one MySQL store", () => {
  afterAll(async () => {
    await admin.end();
    for (const pool of pools) await pool.end();
    await server.stop();
  });

  it("decide each record exactly once: one reconcile call and one decision in its audit trail", async () => {
    await admin.query("CREATE TABLE calls (`key` VARCHAR(255) NOT NULL, `by` VARCHAR(16) NOT NULL)");
    await twoReconcilersDecideOnce({
      store: (i) => mysqlStore(pools[i]!, { table: "records" }),
      asked: (i, key, by) => pools[i]!.query("INSERT INTO calls (`key`, `by`) VALUES (?, ?)", [key, by]),
      questions: async () => {
        const [rows] = (await admin.query(
          "SELECT `key`, COUNT(*) AS n FROM calls GROUP BY `key`",
        )) as unknown as [{ key: string; n: number | string }[]];
        return rows.map((row) => ({ key: row.key, n: Number(row.n) }));
      },
    });
  });
});
