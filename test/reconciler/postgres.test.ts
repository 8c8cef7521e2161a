import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, describe, it } from "vitest";
import { postgresStore } from "../../src/postgres/index.js";
import { postgresService } from "../support/services.js";
import { twoReconcilersDecideOnce } from "./two-reconcilers-scenario.js";

const service = await postgresService();
const suffix = randomBytes(4).toString("hex");
const records = `idemkey_test_reconciler_${suffix}`;
const calls = `idemkey_test_reconcile_calls_${suffix}`;
// One pool per reconciler, as two processes would have, and one for the test's own counting.
const pools = [0, 1].map(() => new pg.Pool({ connectionString: service.url, max: 4 }));
const admin = new pg.Pool({ connectionString: service.url, max: 2 });

(service.skip ? describe.skip : describe)("two reconcilers on one PostgreSQL store", () => {
  afterAll(async () => {
    await admin.query(`DROP TABLE IF EXISTS "${records}", "${calls}"`);
    await admin.query("DELETE FROM idemkey_meta WHERE name = $1", [records]).catch(() => {});
    await admin.end();
    for (const pool of pools) await pool.end();
  });

  it("decide each record exactly once: one reconcile call and one decision in its audit trail", async () => {
    await admin.query(`CREATE TABLE "${calls}" (key text NOT NULL, by text NOT NULL)`);
    await twoReconcilersDecideOnce({
      store: (i) => postgresStore(pools[i]!, { table: records }),
      asked: (i, key, by) => pools[i]!.query(`INSERT INTO "${calls}" (key, by) VALUES ($1, $2)`, [key, by]),
      questions: async () =>
        (
          await admin.query<{ key: string; n: string }>(
            `SELECT key, count(*) AS n FROM "${calls}" GROUP BY key`,
          )
        ).rows.map((row) => ({ key: row.key, n: Number(row.n) })),
    });
  });
});
