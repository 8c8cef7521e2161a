import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdempotencyConflictError } from "../../src/errors/index.js";
import { effectOnce } from "../../src/postgres/index.js";
import { postgresService } from "../support/services.js";

const service = await postgresService();
const suffix = randomBytes(4).toString("hex");
const keys = `idemkey_test_effects_${suffix}`;
const payments = `idemkey_test_payments_${suffix}`;
const pool = new pg.Pool({ connectionString: service.url, max: 12 });

(service.skip ? describe.skip : describe)("effectOnce (PostgreSQL)", () => {
  beforeAll(async () => {
    // The owner's own table: effects write here, and the tests count rows here, never through effectOnce.
    await pool.query(`CREATE TABLE "${payments}" (id serial PRIMARY KEY, key text NOT NULL, amount integer)`);
  });
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS "${payments}", "${keys}"`);
    await pool.query("DELETE FROM idemkey_meta WHERE name = $1", [keys]);
    await pool.end();
  });

  const rows = async (key: string) =>
    (await pool.query(`SELECT id, amount FROM "${payments}" WHERE key = $1 ORDER BY id`, [key])).rows;
  const pay = (key: string, amount: number, fingerprint?: string) =>
    effectOnce(pool, { key, fingerprint, table: keys }, async (client: pg.PoolClient) => {
      const { rows } = await client.query(
        `INSERT INTO "${payments}" (key, amount) VALUES ($1, $2) RETURNING id`,
        [key, amount],
      );
      return { paymentId: rows[0].id as number, amount };
    });

  it("runs the effect once and replays its saved result for the same key", async () => {
    const first = await pay("once", 10, "fp");
    expect(first.replayed).toBe(false);
    expect(await pay("once", 10, "fp")).toEqual({ result: first.result, replayed: true });
    expect(await rows("once")).toEqual([{ id: first.result.paymentId, amount: 10 }]);
  });

  it("throws IdempotencyConflictError for the same key with another fingerprint, without running the effect", async () => {
    await pay("conflict", 10, "amount=10");
    const error = await pay("conflict", 99, "amount=99").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IdempotencyConflictError);
    expect(error).toMatchObject({ key: "conflict" });
    expect((await rows("conflict")).map((r) => r.amount)).toEqual([10]);
  });

  it("rolls back the effect's writes and the key together when the effect throws", async () => {
    const failing = effectOnce(pool, { key: "declined", table: keys }, async (client) => {
      await client.query(`INSERT INTO "${payments}" (key, amount) VALUES ('declined', 5)`);
      throw new Error("declined after the insert");
    });
    await expect(failing).rejects.toThrow("declined after the insert");
    expect(await rows("declined")).toEqual([]);
    expect(
      (await pool.query(`SELECT count(*)::int AS n FROM "${keys}" WHERE key = 'declined'`)).rows[0].n,
    ).toBe(0);
    expect((await pay("declined", 5)).replayed).toBe(false);
    expect(await rows("declined")).toHaveLength(1);
  });

  it("rolls back when the result cannot be saved as JSON", async () => {
    const unsaveable = effectOnce(pool, { key: "bigint", table: keys }, async (client) => {
      await client.query(`INSERT INTO "${payments}" (key, amount) VALUES ('bigint', 1)`);
      return 1n;
    });
    await expect(unsaveable).rejects.toThrow(TypeError);
    expect(await rows("bigint")).toEqual([]);
  });

  it("lets one of 24 concurrent calls from many connections run the effect; the others wait and replay it", async () => {
    const results = await Promise.all(
      Array.from({ length: 24 }, () =>
        effectOnce(pool, { key: "race", table: keys }, async (client: pg.PoolClient) => {
          await client.query("SELECT pg_sleep(0.05)"); // hold the key's index entry while the others arrive
          const { rows } = await client.query(
            `INSERT INTO "${payments}" (key, amount) VALUES ('race', 1) RETURNING id`,
          );
          return rows[0].id as number;
        }),
      ),
    );
    const effects = await rows("race");
    expect(effects).toHaveLength(1);
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(new Set(results.map((r) => r.result))).toEqual(new Set([effects[0].id]));
  });

  it("lets a waiting duplicate run the effect when the first call rolls back", async () => {
    let firstStarted!: () => void;
    const started = new Promise<void>((resolve) => {
      firstStarted = resolve;
    });
    const first = effectOnce(pool, { key: "retry", table: keys }, async (client) => {
      await client.query(`INSERT INTO "${payments}" (key, amount) VALUES ('retry', 1)`);
      firstStarted();
      await client.query("SELECT pg_sleep(0.2)"); // the duplicate is now blocked on the key
      throw new Error("first attempt fails");
    });
    await started;
    const second = pay("retry", 2);
    await expect(first).rejects.toThrow("first attempt fails");
    expect((await second).replayed).toBe(false);
    expect((await rows("retry")).map((r) => r.amount)).toEqual([2]);
  });

  it("rejects bad arguments with a TypeError naming the option", async () => {
    await expect(effectOnce(pool, { key: "" }, () => 1)).rejects.toThrow(/options\.key/);
    await expect(effectOnce(pool, { key: "k", schema: "x y" }, () => 1)).rejects.toThrow(/options\.schema/);
    // @ts-expect-error: not a pool
    await expect(effectOnce({ query() {} }, { key: "k" }, () => 1)).rejects.toThrow(/pool must be/);
  });
});

if (service.skip) await pool.end();
