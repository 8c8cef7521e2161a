import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { createHarness, defineTool, memoryStore, OutcomeUnknownError } from "../../src/index.js";
import { createReconciler } from "../../src/reconciler/index.js";
import { effectOnce, effectOnceLookup } from "../../src/sqlite/index.js";

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
    const lost = defineTool<{ n: number }, { id: number }>({
      name: "order",
      effect: "unguarded",
      run: (args, ctx) => {
        // Even n reach the owner and commit; every answer is lost.
        if (args.n % 2 === 0) place(args.n, ctx.idempotencyKey);
        throw new Error("socket hang up");
      },
    });
    const store = memoryStore();
    const harness = createHarness({ store, retry: { retries: 0 } });
    for (let n = 0; n < 4; n++) {
      await expect(harness.call("task", lost, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
    }
    const order = defineTool<{ n: number }, { id: number }>({
      name: "order",
      effect: "unguarded",
      run: (args, ctx) => place(args.n, ctx.idempotencyKey).result,
      reconcile: (_, ctx) => {
        const found = effectOnceLookup<{ id: number }>(db, { key: ctx.idempotencyKey });
        return found.state === "completed"
          ? { status: "done", result: found.result }
          : { status: "not_done" };
      },
    });
    expect(await createReconciler({ store, tools: [order] }).sweep()).toMatchObject({ done: 2, notDone: 2 });
    for (let n = 0; n < 4; n++) await harness.call("task", order, { n });
    const counts = db.prepare("SELECT n, count(*) AS c FROM orders GROUP BY n ORDER BY n").all();
    expect(counts).toEqual([0, 1, 2, 3].map((n) => ({ n, c: 1 })));
  });
});
