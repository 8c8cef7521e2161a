import { describe, expect, it } from "vitest";
import { createHarness, defineTool } from "../../src/index.js";
import type { Store } from "../../src/store/types.js";
import { effectLog } from "../support/effect-log.js";

/** The little of a driver's connection the test drives itself: the application's own statements and transaction. */
export interface AppConnection {
  exec(sql: string): void;
  /** The rows of `SELECT ...`. */
  rows(sql: string): unknown[];
  close(): void;
}

/**
 * A SQLite store on a connection the application holds a transaction open on joins that transaction, whichever the
 * driver (better-sqlite3 or node:sqlite): the harness call's claim and completion commit with the application's own
 * write, or roll back with it. `open` gives a fresh in-memory connection and a store on it.
 */
export function testAppTransaction(name: string, open: () => { app: AppConnection; store: Store }): void {
  describe(`${name} inside the application's own transaction`, () => {
    const run = async (end: "COMMIT" | "ROLLBACK") => {
      const { app, store } = open();
      const effects = effectLog(`app-transaction-${end}`);
      const send = defineTool({
        name: "send",
        effect: "keyed",
        run: (args: { to: string }, ctx) => {
          effects.effect(ctx.idempotencyKey);
          return { sent: args.to };
        },
      });
      const harness = createHarness({ store });
      const key = harness.key("task", send, { to: "ana" });
      try {
        app.exec("CREATE TABLE orders (id TEXT PRIMARY KEY)");
        app.exec("BEGIN");
        app.exec("INSERT INTO orders (id) VALUES ('o-1')");
        expect(await harness.call("task", send, { to: "ana" })).toEqual({ sent: "ana" });
        app.exec(end);
        return {
          record: await store.get(`call:${key}`),
          orders: app.rows("SELECT id FROM orders"),
          effects,
          key,
        };
      } finally {
        await store.close();
        app.close();
      }
    };

    it("commits the call's record with the application's write", async () => {
      const { record, orders, effects, key } = await run("COMMIT");
      expect(record).toMatchObject({ state: "completed", result: JSON.stringify({ sent: "ana" }) });
      expect(orders).toHaveLength(1);
      expect(effects.count(key)).toBe(1);
      effects.cleanup();
    });

    it("rolls the call's record back with the application's write", async () => {
      const { record, orders, effects, key } = await run("ROLLBACK");
      expect(record).toBeUndefined();
      expect(orders).toHaveLength(0);
      expect(effects.count(key)).toBe(1);
      effects.cleanup();
    });
  });
}
