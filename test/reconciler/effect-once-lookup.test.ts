import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { effectOnce, effectOnceLookup } from "../../src/sqlite/index.js";
import { reconcileLostOrders } from "./effect-once-scenario.js";

describe("effectOnceLookup: an effectOnce owner answers from its own table", () => {
  it("completed with the result once the effect committed, unknown before and after a rollback", () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, sku TEXT)");
    expect(effectOnceLookup(db, { key: "k1" })).toEqual({ state: "unknown" });
    effectOnce(db, { key: "k1" }, (d) =>
      d.prepare("INSERT INTO orders (sku) VALUES ('a') RETURNING id").get(),
    );
    expect(effectOnceLookup(db, { key: "k1" })).toEqual({ state: "completed", result: { id: 1 } });
    expect(() =>
      effectOnce(db, { key: "k2" }, () => {
        throw new Error("declined");
      }),
    ).toThrow("declined");
    expect(effectOnceLookup(db, { key: "k2" })).toEqual({ state: "unknown" });
    expect(() => effectOnceLookup(db, { key: "" })).toThrow(/options\.key/);
  });

  it("is a reconcile: the reconciler decides unknown outcomes from the owner's table, and nothing runs twice", async () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, n INTEGER)");
    const place = (n: number, key: string) =>
      effectOnce(
        db,
        { key },
        (d) => d.prepare("INSERT INTO orders (n) VALUES (?) RETURNING id").get(n) as { id: number },
      );
    await reconcileLostOrders({
      place,
      lookup: (key) => effectOnceLookup<{ id: number }>(db, { key }),
    });
    const counts = db.prepare("SELECT n, count(*) AS c FROM orders GROUP BY n ORDER BY n").all();
    expect(counts).toEqual([0, 1, 2, 3].map((n) => ({ n, c: 1 })));
  });
});
