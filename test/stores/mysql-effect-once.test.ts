import { setTimeout as sleep } from "node:timers/promises";
import mysql, { type PoolConnection, type ResultSetHeader } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdempotencyConflictError } from "../../src/errors/index.js";
import { effectOnce } from "../../src/mysql/index.js";
import { privateMariaDb } from "../support/mariadb.js";

const server = await privateMariaDb();
const pool = mysql.createPool({ uri: server.url, connectionLimit: 30 });
const keys = "effects";

/**
 * Resolves once `count` statements whose text contains `text` are running on the server: each is waiting on a lock,
 * since alone it would be done at once. Polled, never slept on. (INNODB_TRX missed some waits in MariaDB 10.11.)
 */
async function lockWaits(count: number, text: string): Promise<void> {
  for (let i = 0; ; i++) {
    const [rows] = (await pool.query(
      "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query' AND ID <> CONNECTION_ID() AND INSTR(INFO, ?) > 0",
      [text],
    )) as unknown as [{ n: number }[]];
    if (Number(rows[0]!.n) >= count) return;
    if (i > 2_000) throw new Error(`never saw ${count} statements with ${text} waiting`);
    await sleep(5);
  }
}

describe("effectOnce (MySQL, on MariaDB)", () => {
  beforeAll(async () => {
    // The owner's own table: effects write here, and the tests count rows here, never through effectOnce.
    await pool.query(
      "CREATE TABLE payments (id INT AUTO_INCREMENT PRIMARY KEY, `key` VARCHAR(64) NOT NULL, amount INT)",
    );
  });
  afterAll(async () => {
    await pool.end();
    await server.stop();
  });

  const rows = async (key: string) =>
    (await pool.query("SELECT id, amount FROM payments WHERE `key` = ? ORDER BY id", [key]))[0] as {
      id: number;
      amount: number;
    }[];
  const pay = (key: string, amount: number, fingerprint?: string) =>
    effectOnce(pool, { key, fingerprint, table: keys }, async (connection) => {
      const [header] = await connection.query("INSERT INTO payments (`key`, amount) VALUES (?, ?)", [
        key,
        amount,
      ]);
      return { paymentId: (header as ResultSetHeader).insertId, amount };
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

  it("rolls back the effect's writes and the key with the application's transaction when the effect throws", async () => {
    const failing = effectOnce(pool, { key: "declined", table: keys }, async (connection) => {
      await connection.query("INSERT INTO payments (`key`, amount) VALUES ('declined', 5)");
      throw new Error("declined after the insert");
    });
    await expect(failing).rejects.toThrow("declined after the insert");
    expect(await rows("declined")).toEqual([]);
    const [used] = (await pool.query(
      `SELECT COUNT(*) AS n FROM ${keys} WHERE \`key\` = 'declined'`,
    )) as unknown as [{ n: number }[]];
    expect(Number(used[0]!.n)).toBe(0);
    expect((await pay("declined", 5)).replayed).toBe(false);
    expect(await rows("declined")).toHaveLength(1);
  });

  it("rolls back when the result cannot be saved as JSON", async () => {
    const unsaveable = effectOnce(pool, { key: "bigint", table: keys }, async (connection) => {
      await connection.query("INSERT INTO payments (`key`, amount) VALUES ('bigint', 1)");
      return 1n;
    });
    await expect(unsaveable).rejects.toThrow(TypeError);
    expect(await rows("bigint")).toEqual([]);
  });

  it("lets one of 24 concurrent calls from many connections run the effect; the others wait and replay it", async () => {
    const results = await Promise.all(
      Array.from({ length: 24 }, () =>
        effectOnce(pool, { key: "race", table: keys }, async (connection: PoolConnection) => {
          await connection.query("SELECT SLEEP(0.05)"); // hold the key while the others arrive
          const [header] = await connection.query("INSERT INTO payments (`key`, amount) VALUES ('race', 1)");
          return (header as ResultSetHeader).insertId;
        }),
      ),
    );
    const effects = await rows("race");
    expect(effects).toHaveLength(1);
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(new Set(results.map((r) => r.result))).toEqual(new Set([effects[0]!.id]));
  });

  it("lets a waiting duplicate run the effect when the first call's transaction rolls back", async () => {
    let firstStarted!: () => void;
    const started = new Promise<void>((resolve) => {
      firstStarted = resolve;
    });
    let failFirst!: () => void;
    const failing = new Promise<void>((resolve) => {
      failFirst = resolve;
    });
    const first = effectOnce(pool, { key: "retry", table: keys }, async (connection) => {
      await connection.query("INSERT INTO payments (`key`, amount) VALUES ('retry', 1)");
      firstStarted();
      await failing;
      throw new Error("first attempt fails");
    });
    await started;
    const second = pay("retry", 2);
    await lockWaits(1, "INSERT INTO `effects`"); // the duplicate is blocked on the key the first one holds
    failFirst();
    await expect(first).rejects.toThrow("first attempt fails");
    expect((await second).replayed).toBe(false);
    expect((await rows("retry")).map((r) => r.amount)).toEqual([2]);
  });

  it("rejects bad arguments with a TypeError naming the option", async () => {
    await expect(effectOnce(pool, { key: "" }, () => 1)).rejects.toThrow(/options\.key/);
    await expect(effectOnce(pool, { key: "k", table: "x y" }, () => 1)).rejects.toThrow(/options\.table/);
    // @ts-expect-error: not a pool
    await expect(effectOnce({ query() {} }, { key: "k" }, () => 1)).rejects.toThrow(/pool must be/);
  });
});
