import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { effectOnce, sqliteStore } from "../../src/sqlite/index.js";
import { needsNode } from "../support/node-version.js";
import { testStore } from "./contract.js";

// better-sqlite3 13 (installed as the alias better-sqlite3-13), whose engines want Node 22: the store is handed its
// Database, so the contract runs unchanged on 13's engine while the path-opening form keeps using 12.
const node = needsNode(22, "better-sqlite3 13");
const Database13 = node.skip
  ? undefined
  : (createRequire(import.meta.url)("better-sqlite3-13") as typeof BetterSqlite3);

const dir = mkdtempSync(join(tmpdir(), "idemkey-sqlite13-"));
const opened: BetterSqlite3.Database[] = [];
afterAll(() => {
  for (const db of opened) db.close();
  rmSync(dir, { recursive: true, force: true });
});
const open = (name: string) => {
  const db = new Database13!(join(dir, name));
  opened.push(db);
  return db;
};

if (!node.skip)
  testStore("sqlite on better-sqlite3 13", (clock) => sqliteStore(open("contract.db"), { clock }));

describe.skipIf(node.skip)(`sqliteStore and effectOnce on better-sqlite3 13${node.label}`, () => {
  it("is driven by 13 itself, not by 12", () => {
    const db = open("version.db");
    expect(
      (createRequire(import.meta.url)("better-sqlite3-13/package.json") as { version: string }).version,
    ).toMatch(/^13\./);
    expect(db.prepare("SELECT sqlite_version() AS v").get()).toEqual({ v: expect.any(String) });
  });

  it("writes the effect and its key in one transaction: a repeat of the key does not write again", () => {
    const db = open("effects.db");
    db.exec("CREATE TABLE charges (id INTEGER PRIMARY KEY, amount INTEGER)");
    const charge = (key: string) =>
      effectOnce(db, { key }, (tx) => {
        const row = tx.prepare("INSERT INTO charges (amount) VALUES (?) RETURNING id").get(500) as {
          id: number;
        };
        return { chargeId: row.id };
      });
    expect(charge("k-1")).toEqual({ result: { chargeId: 1 }, replayed: false });
    expect(charge("k-1")).toEqual({ result: { chargeId: 1 }, replayed: true });
    // Counted in the owner's own table, not through effectOnce.
    expect(db.prepare("SELECT count(*) AS n FROM charges").get()).toEqual({ n: 1 });
  });
});
