import mysql, { type ResultSetHeader } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { effectOnce, effectOnceLookup } from "../../src/mysql/index.js";
import { privateMariaDb } from "../support/mariadb.js";
import { reconcileLostOrders } from "./effect-once-scenario.js";

// The MySQL half of effect-once-lookup.test.ts, on a private MariaDB of this file's own: the owner answers a key
// lookup from effectOnce's own table. Orders are counted in the owner's table, never through idemkey.
const server = await privateMariaDb();
const pool = mysql.createPool({ uri: server.url, connectionLimit: 6 });
const keys = "effects";

describe("effectOnceLookup on MySQL (MariaDB)", () => {
  beforeAll(async () => {
    await pool.query("CREATE TABLE orders (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL)");
  });
  afterAll(async () => {
    await pool.end();
    await server.stop();
  });

  const place = (n: number, key: string) =>
    effectOnce(pool, { key, table: keys }, async (connection) => {
      const [header] = await connection.query("INSERT INTO orders (n) VALUES (?)", [n]);
      return { id: (header as ResultSetHeader).insertId };
    });
  const count = async (n: number) =>
    Number(
      ((await pool.query("SELECT COUNT(*) AS c FROM orders WHERE n = ?", [n]))[0] as { c: number }[])[0]!.c,
    );

  it("unknown before the table exists, completed once the effect committed, unknown after a rollback", async () => {
    expect(await effectOnceLookup(pool, { key: "k1", table: keys })).toEqual({ state: "unknown" });
    const placed = await place(1, "k1");
    expect(await effectOnceLookup(pool, { key: "k1", table: keys })).toEqual({
      state: "completed",
      result: placed.result,
    });
    await expect(
      effectOnce(pool, { key: "k2", table: keys }, () => Promise.reject(new Error("declined"))),
    ).rejects.toThrow("declined");
    expect(await effectOnceLookup(pool, { key: "k2", table: keys })).toEqual({ state: "unknown" });
    await expect(effectOnceLookup(pool, { key: "", table: keys })).rejects.toThrow(/options\.key/);
    await expect(effectOnceLookup(pool, { key: "k1", table: "a`b" })).rejects.toThrow(/options\.table/);
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
    const first = effectOnce(pool, { key: "k-slow", table: keys }, async (connection) => {
      const [header] = await connection.query("INSERT INTO orders (n) VALUES (50)");
      entered();
      await held;
      return { id: (header as ResultSetHeader).insertId };
    });
    await inside;
    // Not committed: the lookup cannot see it, so a reconciler would say not_done ...
    expect(await effectOnceLookup(pool, { key: "k-slow", table: keys })).toEqual({ state: "unknown" });
    // ... and the run that follows waits on the key's primary key, then replays the first one's result.
    const second = effectOnce(pool, { key: "k-slow", table: keys }, async () => ({ id: -1 }));
    release();
    const done = await first;
    expect(done.replayed).toBe(false);
    expect(await second).toEqual({ result: done.result, replayed: true });
    expect(await count(50)).toBe(1);
  });

  it("is a reconcile: the reconciler decides unknown outcomes from the owner's table, and nothing runs twice", async () => {
    await reconcileLostOrders({
      place: (n, key) => place(100 + n, key),
      lookup: (key) => effectOnceLookup<{ id: number }>(pool, { key, table: keys }),
    });
    for (const n of [100, 101, 102, 103]) expect(await count(n), String(n)).toBe(1);
  });
});
