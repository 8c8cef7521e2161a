import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SchemaVersionError } from "../../src/errors/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { listStatement } from "../../src/sqlite/list.js";
import { testStore, testStoreAcrossProcesses } from "./contract.js";
import { testAppTransaction } from "./sqlite-app-transaction.js";
import { testSqliteHotPath } from "./sqlite-hot-path.js";
import { expectTwoProcessRace } from "./sqlite-race.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

testStore("sqlite (file)", (clock) => sqliteStore(join(dir, "contract.db"), { clock }));
testStore("sqlite (:memory:)", (clock) => sqliteStore(":memory:", { clock, table: "records_in_memory" }));
testStoreAcrossProcesses("sqlite (file)", (name, at) => ({ kind: "sqlite", path: join(at, `${name}.db`) }));
testSqliteHotPath("sqliteStore", dir, (path, options) => sqliteStore(path, options));
testAppTransaction("sqliteStore", () => {
  const db = new BetterSqlite3(":memory:");
  return {
    app: { exec: (sql) => db.exec(sql), rows: (sql) => db.prepare(sql).all(), close: () => db.close() },
    store: sqliteStore(db),
  };
});

describe("sqliteStore", () => {
  const claimInput = { fingerprint: "fp", token: "t1", leaseMs: 1_000, ttlMs: 60_000 };

  it("pages with bounds SQLite seeks on the primary key, for every combination of prefix, after and state", async () => {
    const path = join(dir, "plan.db");
    const store = sqliteStore(path, { table: "paged" });
    await store.claim("k", claimInput); // creates the table
    const db = new BetterSqlite3(path);
    try {
      for (const query of [
        { after: "k" },
        { prefix: "p:" },
        { prefix: "p:", after: "p:x" },
        { prefix: "p:", after: "a" },
        { prefix: "p:", state: "pending" as const },
      ]) {
        const { sql, values } = listStatement("paged", "key", query, 0);
        const plan = db
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all(...values)
          .map((row) => (row as { detail: string }).detail)
          .join("; ");
        // A seek names the bound (`key>?`); the old `(@after IS NULL OR key > @after)` gave a bare SCAN.
        expect(plan, JSON.stringify(query)).toMatch(/SEARCH paged USING .*\(key>\?/);
      }
    } finally {
      db.close();
      await store.close();
    }
  });

  it("puts a file in WAL mode and creates a versioned schema on first use", async () => {
    const path = join(dir, "schema.db");
    const store = sqliteStore(path, { table: "ledger" });
    const db = new BetterSqlite3(path);
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    const tables = () => db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
    expect(tables()).not.toContain("ledger");
    await store.claim("k", claimInput);
    expect(tables()).toEqual(expect.arrayContaining(["ledger", "idemkey_meta"]));
    expect(db.prepare("SELECT version FROM idemkey_meta WHERE name = 'ledger'").pluck().get()).toBe(2);
    expect(db.prepare("SELECT key, state FROM ledger").all()).toEqual([{ key: "k", state: "pending" }]);
    await store.close();
    db.close();
  });

  it("refuses a table whose schema is newer than it understands", async () => {
    const db = new BetterSqlite3(":memory:");
    await sqliteStore(db).get("k");
    db.prepare("UPDATE idemkey_meta SET version = 99 WHERE name = 'idemkey_records'").run();
    const error = await sqliteStore(db)
      .get("k")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaVersionError);
    expect(error).toMatchObject({ table: "idemkey_records", found: 99, supported: 2 });
    db.close();
  });

  it("leaves a Database it was given open, and closes a file it opened", async () => {
    const db = new BetterSqlite3(":memory:");
    const store = sqliteStore(db);
    await store.claim("k", claimInput);
    await store.close();
    expect(db.open).toBe(true);
    expect(db.prepare("SELECT count(*) FROM idemkey_records").pluck().get()).toBe(1);
    db.close();

    const own = sqliteStore(join(dir, "owned.db"));
    await own.claim("k", claimInput);
    await own.close();
    await expect(own.get("k")).rejects.toThrow(/not open/);
  });

  it("recreates its table when first used inside a caller's transaction that rolled back", async () => {
    const db = new BetterSqlite3(":memory:");
    const store = sqliteStore(db);
    db.prepare("BEGIN").run();
    await store.claim("k", claimInput);
    db.prepare("ROLLBACK").run();
    expect(await store.get("k")).toBeUndefined();
    expect((await store.claim("k", claimInput)).status).toBe("claimed");
    db.close();
  });

  it("reads a replay outside a transaction while recent claims met records, and claims in one again once they did not", async () => {
    const statements: string[] = [];
    const db = new BetterSqlite3(":memory:", {
      verbose: (sql) => statements.push(String(sql).trim().split(/\s+/)[0]!),
    });
    const store = sqliteStore(db);
    // Each claim in a turn of its own, as a caller between two requests: none waits for a group.
    const sent = async (key: string, token: string) => {
      await new Promise((resolve) => setImmediate(resolve));
      statements.length = 0;
      const { status } = await store.claim(key, { ...claimInput, token });
      return `${status}: ${statements.join(" ")}`;
    };
    await store.claim("done", claimInput);
    await store.update(
      "done",
      { token: claimInput.token },
      { state: "completed", token: null, leaseMs: null },
    );
    const replays = [];
    for (let i = 0; i < 6; i++) replays.push(await sent("done", `replay${i}`));
    const inTransaction = "exists: BEGIN SELECT COMMIT";
    expect(replays).toEqual([
      inTransaction,
      inTransaction,
      inTransaction,
      inTransaction,
      "exists: SELECT",
      "exists: SELECT",
    ]);
    // Six claims met the record: new keys read first until fewer than four of the recent claims did.
    const fresh = [];
    for (let i = 0; i < 4; i++) fresh.push(await sent(`new${i}`, "t"));
    const readFirst = "claimed: SELECT BEGIN INSERT COMMIT";
    expect(fresh).toEqual([readFirst, readFirst, readFirst, "claimed: BEGIN SELECT INSERT COMMIT"]);
    db.close();
  });

  it("sets only a short synchronous busy timeout on the connection (the rest of the wait is asynchronous)", () => {
    const db = new BetterSqlite3(":memory:");
    sqliteStore(db, { busyTimeoutMs: 1234 });
    expect(db.pragma("busy_timeout", { simple: true })).toBe(20);
    sqliteStore(db, { busyTimeoutMs: 5 });
    expect(db.pragma("busy_timeout", { simple: true })).toBe(5);
    db.close();
  });

  it("leaves a passed-in connection's checkpoint interval alone", () => {
    const db = new BetterSqlite3(":memory:");
    db.pragma("wal_autocheckpoint = 123");
    sqliteStore(db);
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(123);
    db.close();
  });

  it("leaves a passed-in connection's synchronous setting alone unless told, and sets the one it is told", () => {
    const db = new BetterSqlite3(":memory:");
    db.pragma("synchronous = EXTRA");
    sqliteStore(db);
    expect(db.pragma("synchronous", { simple: true })).toBe(3);
    sqliteStore(db, { synchronous: "normal" });
    expect(db.pragma("synchronous", { simple: true })).toBe(1);
    sqliteStore(db, { synchronous: "full" });
    expect(db.pragma("synchronous", { simple: true })).toBe(2);
    db.close();
  });

  it("rejects bad arguments with a TypeError naming the option", () => {
    // @ts-expect-error: only "normal" or "full"
    expect(() => sqliteStore(":memory:", { synchronous: "off" })).toThrow(/options\.synchronous/);
    expect(() => sqliteStore(":memory:", { table: "x; DROP TABLE y" })).toThrow(
      /options\.table must be a plain SQL identifier/,
    );
    expect(() => sqliteStore(":memory:", { busyTimeoutMs: -1 })).toThrow(/options\.busyTimeoutMs/);
    expect(() => sqliteStore(":memory:", { busyTimeoutMs: 1.5 })).toThrow(TypeError);
    // @ts-expect-error: a clock must be a function
    expect(() => sqliteStore(":memory:", { clock: 5 })).toThrow(/options\.clock/);
    // @ts-expect-error: not a path nor a Database
    expect(() => sqliteStore(42)).toThrow(/pathOrDatabase/);
    expect(() => sqliteStore("")).toThrow(TypeError);
  });

  it("does not write into the caller's options", () => {
    const options = Object.freeze({ table: "frozen_options" });
    expect(() => sqliteStore(":memory:", options)).not.toThrow();
  });
});

describe("sqliteStore across processes", () => {
  it("lets two processes claim the same 200 keys on one file, each key exactly once in total", async () => {
    const path = join(dir, "race.db");
    const setup = sqliteStore(path);
    await setup.get("init"); // both children find the schema in place
    await setup.close();
    await expectTwoProcessRace("sqlite", path);
  });
});
