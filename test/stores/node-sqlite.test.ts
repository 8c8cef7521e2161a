import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { nodeSqlite } from "../../src/node-sqlite/driver.js";
import { nodeSqliteStore } from "../../src/node-sqlite/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { processBudget } from "../support/budget.js";
import { testStore, testStoreAcrossProcesses } from "./contract.js";
import { testAppTransaction } from "./sqlite-app-transaction.js";
import { testSqliteHotPath } from "./sqlite-hot-path.js";
import { expectTwoProcessRace } from "./sqlite-race.js";

// node:sqlite is in Node.js without a flag from 22.13: on an older Node the suites are skipped, by name.
const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
const has = major > 22 || (major === 22 && minor >= 13);
const why = has ? "" : ` (skipped: node:sqlite needs Node >= 22.13, this is ${process.versions.node})`;
if (!has) console.log(`skipped on Node ${process.versions.node}: nodeSqliteStore needs Node >= 22.13`);

const dir = mkdtempSync(join(tmpdir(), "idemkey-node-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Registered on every Node, so that an older one reports it skipped by name.
testStoreAcrossProcesses(
  `node:sqlite (file)${why}`,
  (name, at) => ({ kind: "node-sqlite", path: join(at, `${name}.db`) }),
  { skip: has ? undefined : why },
);
if (has) {
  testStore("node:sqlite (file)", (clock) => nodeSqliteStore(join(dir, "contract.db"), { clock }));
  testStore("node:sqlite (:memory:)", (clock) => nodeSqliteStore(":memory:", { clock, table: "in_memory" }));
  testSqliteHotPath("nodeSqliteStore", dir, (path, options) => nodeSqliteStore(path, options));
  testAppTransaction("nodeSqliteStore", () => {
    const db = new nodeSqlite!.DatabaseSync(":memory:");
    return {
      app: { exec: (sql) => db.exec(sql), rows: (sql) => db.prepare(sql).all(), close: () => db.close() },
      store: nodeSqliteStore(db),
    };
  });
}

describe.skipIf(!has)(`nodeSqliteStore${why}`, () => {
  const claimInput = { fingerprint: "fp", token: "t1", leaseMs: 1_000, ttlMs: 60_000 };

  it("shares the table with sqliteStore: a record one writes, the other reads", async () => {
    const path = join(dir, "shared.db");
    const node = nodeSqliteStore(path);
    await node.claim("k", claimInput);
    const better = sqliteStore(path);
    expect(await better.get("k")).toMatchObject({ key: "k", state: "pending", token: "t1" });
    await better.update("k", { token: "t1" }, { state: "completed", token: null, result: "42" });
    expect(await node.get("k")).toMatchObject({ state: "completed", result: "42" });
    await better.close();
    await node.close();
  });

  it("opens a file another connection holds locked, and its first claim waits for the lock", async () => {
    // Deno's node:sqlite reports SQLITE_BUSY with no errcode, only its message: the store must still know it.
    const path = join(dir, "locked.db");
    const holder = new nodeSqlite!.DatabaseSync(path);
    holder.exec("CREATE TABLE held (x); BEGIN EXCLUSIVE; INSERT INTO held VALUES (1)");
    const store = nodeSqliteStore(path, { busyTimeoutMs: 60_000 });
    const claiming = store.claim("k", claimInput);
    holder.exec("COMMIT");
    holder.close();
    expect(await claiming).toMatchObject({ status: "claimed" });
    await store.close();
  });

  it("rejects bad arguments with a TypeError naming the option", () => {
    expect(() => nodeSqliteStore(join(dir, "x.db"), { table: "no spaces" })).toThrow(/options\.table/);
    expect(() => nodeSqliteStore(join(dir, "x.db"), { busyTimeoutMs: -1 })).toThrow(/options\.busyTimeoutMs/);
    expect(() => nodeSqliteStore(42 as never)).toThrow(/pathOrDatabase/);
  });
});

describe.skipIf(!has)(`nodeSqliteStore across processes${why}`, () => {
  it("lets two processes claim the same 200 keys on one file, each key exactly once in total", {
    timeout: processBudget(2),
  }, async () => {
    const path = join(dir, "race.db");
    const setup = nodeSqliteStore(path);
    await setup.get("init");
    await setup.close();
    await expectTwoProcessRace("node-sqlite", path);
  });
});
