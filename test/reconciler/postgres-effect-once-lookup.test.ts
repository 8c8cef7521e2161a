import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { effectOnce, effectOnceLookup } from "../../src/postgres/index.js";
import { postgresService } from "../support/services.js";
import { reconcileLostOrders } from "./effect-once-scenario.js";

// The PostgreSQL half of effect-once-lookup.test.ts: the owner answers a key lookup from effectOnce's own table,
// on the shared server, in tables of this run's own. Orders are counted in the owner's table, never through idemkey.
const service = await postgresService();
const suffix = randomBytes(4).toString("hex");
const keys = `idemkey_test_effects_lookup_${suffix}`;
const orders = `idemkey_test_orders_${suffix}`;
const pool = new pg.Pool({ connectionString: service.url, max: 4 });

(service.skip ? describe.skip : describe)("effectOnceLookup on PostgreSQL", () => {
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS "${keys}", "${orders}"`);
    await pool.query("DELETE FROM idemkey_meta WHERE name = $1", [keys]).catch(() => {});
    await pool.end();
  });

  const place = (n: number, key: string) =>
    effectOnce(pool, { key, table: keys }, async (client: pg.PoolClient) => {
      const { rows } = await client.query(`INSERT INTO "${orders}" (n) VALUES ($1) RETURNING id`, [n]);
      return { id: Number((rows[0] as { id: number }).id) };
    });

  it("unknown before the table exists, completed once the effect committed, unknown after a rollback", async () => {
    expect(await effectOnceLookup(pool, { key: "k1", table: keys })).toEqual({ state: "unknown" });
    await pool.query(`CREATE TABLE "${orders}" (id serial PRIMARY KEY, n integer NOT NULL)`);
    await place(1, "k1");
    expect(await effectOnceLookup(pool, { key: "k1", table: keys })).toEqual({
      state: "completed",
      result: { id: 1 },
    });
    await expect(
      effectOnce(pool, { key: "k2", table: keys }, () => Promise.reject(new Error("declined"))),
    ).rejects.toThrow("declined");
    expect(await effectOnceLookup(pool, { key: "k2", table: keys })).toEqual({ state: "unknown" });
    await expect(effectOnceLookup(pool, { key: "", table: keys })).rejects.toThrow(/options\.key/);
    await expect(effectOnceLookup(pool, { key: "k1", table: 'a"b' })).rejects.toThrow(/options\.table/);
  });

  it("an effect still running is not seen, and the run it lets through replays rather than runs again", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered: () => void = () => {};
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const first = effectOnce(pool, { key: "k-slow", table: keys }, async (client: pg.PoolClient) => {
      await client.query(`INSERT INTO "${orders}" (n) VALUES (50)`);
      entered();
      await held;
      return { id: 50 };
    });
    await inside;
    // Not committed: the lookup cannot see it, so a reconciler would say not_done ...
    expect(await effectOnceLookup(pool, { key: "k-slow", table: keys })).toEqual({ state: "unknown" });
    // ... and the run that follows waits on the key's unique index, then replays the first one's result.
    const second = effectOnce(pool, { key: "k-slow", table: keys }, async () => ({ id: -1 }));
    release();
    expect(await first).toEqual({ result: { id: 50 }, replayed: false });
    expect(await second).toEqual({ result: { id: 50 }, replayed: true });
    const { rows } = await pool.query(`SELECT count(*)::int AS c FROM "${orders}" WHERE n = 50`);
    expect(rows[0]).toEqual({ c: 1 });
  });

  it("is a reconcile: the reconciler decides unknown outcomes from the owner's table, and nothing runs twice", async () => {
    await reconcileLostOrders({
      place: (n, key) => place(100 + n, key),
      lookup: (key) => effectOnceLookup<{ id: number }>(pool, { key, table: keys }),
    });
    const { rows } = await pool.query(
      `SELECT n, count(*)::int AS c FROM "${orders}" WHERE n >= 100 GROUP BY n ORDER BY n`,
    );
    expect(rows).toEqual([100, 101, 102, 103].map((n) => ({ n, c: 1 })));
  });
});
