import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { IdempotencyConflictError } from "../../src/errors/index.js";
import { effectOnce } from "../../src/sqlite/index.js";
import { runTogether, spawnWorker } from "../support/workers.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-effect-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The owner's own table: the effect writes here, and the tests count rows here, never through effectOnce.
const PAYMENTS =
  "CREATE TABLE payments (id INTEGER PRIMARY KEY, key TEXT NOT NULL, worker TEXT, amount INTEGER)";

describe("effectOnce (SQLite)", () => {
  let db: BetterSqlite3.Database;
  const payments = () => db.prepare("SELECT key, amount FROM payments ORDER BY id").all();
  const pay = (key: string, amount: number, fingerprint?: string) =>
    effectOnce(db, { key, fingerprint }, (tx) => {
      const { id } = tx
        .prepare("INSERT INTO payments (key, amount) VALUES (?, ?) RETURNING id")
        .get(key, amount) as { id: number };
      return { paymentId: id, amount };
    });

  beforeEach(() => {
    db?.close();
    db = new BetterSqlite3(":memory:");
    db.exec(PAYMENTS);
  });

  it("runs the effect once and replays its saved result for the same key", () => {
    expect(pay("k1", 10, "fp")).toEqual({ result: { paymentId: 1, amount: 10 }, replayed: false });
    expect(pay("k1", 10, "fp")).toEqual({ result: { paymentId: 1, amount: 10 }, replayed: true });
    expect(pay("k2", 20, "fp")).toEqual({ result: { paymentId: 2, amount: 20 }, replayed: false });
    expect(payments()).toEqual([
      { key: "k1", amount: 10 },
      { key: "k2", amount: 20 },
    ]);
  });

  it("throws IdempotencyConflictError for the same key with another fingerprint, without running the effect", () => {
    pay("k1", 10, "amount=10");
    const error = (() => {
      try {
        pay("k1", 99, "amount=99");
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(IdempotencyConflictError);
    expect(error).toMatchObject({ key: "k1", retryable: false });
    expect(() => pay("k1", 10)).toThrow(IdempotencyConflictError);
    expect(payments()).toEqual([{ key: "k1", amount: 10 }]);
  });

  it("rolls back the effect's writes and the key together when the effect throws, so the retry runs it", () => {
    const failing = () =>
      effectOnce(db, { key: "k1" }, (tx) => {
        tx.prepare("INSERT INTO payments (key, amount) VALUES ('k1', 10)").run();
        throw new Error("card declined after the insert");
      });
    expect(failing).toThrow("card declined after the insert");
    expect(payments()).toEqual([]);
    expect(db.prepare("SELECT count(*) FROM idemkey_effects").pluck().get()).toBe(0);
    expect(pay("k1", 10).replayed).toBe(false);
    expect(payments()).toEqual([{ key: "k1", amount: 10 }]);
  });

  it("rolls back when the result cannot be saved as JSON", () => {
    const unsaveable = () =>
      effectOnce(db, { key: "k1" }, (tx) => {
        tx.prepare("INSERT INTO payments (key, amount) VALUES ('k1', 10)").run();
        return { big: 10n };
      });
    expect(unsaveable).toThrow(TypeError);
    expect(payments()).toEqual([]);
  });

  it("refuses an asynchronous effect and rolls it back", () => {
    const asynchronous = () =>
      effectOnce(db, { key: "k1" }, async (tx) => {
        tx.prepare("INSERT INTO payments (key, amount) VALUES ('k1', 10)").run();
      });
    expect(asynchronous).toThrow(/must run synchronously/);
    expect(payments()).toEqual([]);
  });

  it("replays undefined and null results as they were", () => {
    expect(effectOnce(db, { key: "u" }, () => undefined)).toEqual({ result: undefined, replayed: false });
    expect(effectOnce(db, { key: "u" }, () => "never")).toEqual({ result: undefined, replayed: true });
    expect(effectOnce(db, { key: "n" }, () => null)).toEqual({ result: null, replayed: false });
    expect(effectOnce(db, { key: "n" }, () => "never")).toEqual({ result: null, replayed: true });
  });

  it("keeps keys in the table it is told to use", () => {
    effectOnce(db, { key: "k", table: "orders_keys" }, () => 1);
    expect(db.prepare("SELECT key, result FROM orders_keys").all()).toEqual([{ key: "k", result: "1" }]);
    expect(effectOnce(db, { key: "k" }, () => 2)).toEqual({ result: 2, replayed: false });
  });

  it("runs in a savepoint of a transaction the caller already opened", () => {
    const outer = db.transaction(() => {
      pay("k1", 10);
      throw new Error("the caller's own transaction fails later");
    });
    expect(outer).toThrow("fails later");
    expect(payments()).toEqual([]);
    expect(pay("k1", 10).replayed).toBe(false);
  });

  it("rejects bad arguments with a TypeError naming the option", () => {
    expect(() => effectOnce(db, { key: "" }, () => 1)).toThrow(/options\.key/);
    expect(() => effectOnce(db, { key: "k", table: "a-b" }, () => 1)).toThrow(/options\.table/);
    // @ts-expect-error: a fingerprint is a string
    expect(() => effectOnce(db, { key: "k", fingerprint: 1 }, () => 1)).toThrow(/options\.fingerprint/);
    // @ts-expect-error: the effect is a function
    expect(() => effectOnce(db, { key: "k" }, 1)).toThrow(/effect must be a function/);
  });
});

describe("effectOnce (SQLite) across processes", () => {
  it("runs each effect once when three processes race on the same 100 keys, and all see the winner's result", async () => {
    const path = join(dir, "effects.db");
    const setup = new BetterSqlite3(path);
    setup.pragma("journal_mode = WAL");
    setup.exec(PAYMENTS);
    effectOnce(setup, { key: "setup" }, () => null); // the key table exists before the race
    setup.close();

    type Output = { key: string; result: { paymentId: number; by: string }; replayed: boolean }[];
    const script = new URL("./fixtures/sqlite-effect-worker.ts", import.meta.url);
    const outputs = await runTogether(
      ["a", "b", "c"].map((name) => spawnWorker<Output>(script, [path, "100", name])),
    );

    const db = new BetterSqlite3(path, { readonly: true });
    const rows = db.prepare("SELECT id, key, worker FROM payments").all() as {
      id: number;
      key: string;
      worker: string;
    }[];
    db.close();
    expect(rows).toHaveLength(100);
    expect(new Set(rows.map((r) => r.key)).size).toBe(100);
    for (const { id, key, worker } of rows) {
      const seen = outputs.map((o) => o.find((r) => r.key === key)!);
      expect(seen.map((r) => r.result)).toEqual([0, 1, 2].map(() => ({ paymentId: id, by: worker })));
      expect(seen.filter((r) => !r.replayed)).toHaveLength(1);
    }
  });
});
