import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { sqliteAsyncStore } from "../../src/sqlite-async/index.js";
import { testStore, testStoreAcrossProcesses } from "./contract.js";
import { betterSqliteConnection } from "./fixtures/better-sqlite-connection.js";

/**
 * The async SQLite store (src/sqlite-async, under libsqlStore and d1Store) on a connection that does exactly what
 * `AsyncSqlConnection` promises (better-sqlite3, every batch a `BEGIN IMMEDIATE` transaction): the contract apart
 * from any one client's behaviour, in one process and across processes.
 */
const dir = mkdtempSync(join(tmpdir(), "idemkey-sqlite-async-"));
const opened: { close(): void }[] = [];
afterAll(() => {
  for (const connection of opened) connection.close();
  rmSync(dir, { recursive: true, force: true });
});

testStore("sqliteAsyncStore (better-sqlite3 connection)", (clock) => {
  const made = betterSqliteConnection(join(dir, "contract.db"));
  opened.push(made);
  return sqliteAsyncStore(made.connection, {
    driver: { engine: "sqlite", name: "SQLite (async connection)" },
    factory: "sqliteAsyncStore",
    options: { clock },
  });
});
testStoreAcrossProcesses("sqliteAsyncStore (better-sqlite3 connection)", (name, at) => ({
  kind: "sqlite-async",
  path: join(at, `${name}.db`),
}));
