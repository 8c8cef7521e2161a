import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { afterAll } from "vitest";
import type { AsyncSqlConnection } from "../../src/sqlite-async/index.js";
import { sqliteAsyncStore } from "../../src/sqlite-async/index.js";
import { testStore } from "./contract.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-sqlite-async-"));
const client = createClient({ url: `file:${join(dir, "module.db")}` });
afterAll(() => {
  client.close();
  rmSync(dir, { recursive: true, force: true });
});

// Only query and batch, no transaction method at all: the D1 constraint, on a real SQLite file.
const connection: AsyncSqlConnection = {
  query: async (sql, args) => (await client.execute({ sql, args: [...args] })).rows,
  batch: async (statements, intent) =>
    (
      await client.batch(
        statements.map((s) => ({ sql: s.sql, args: [...s.args] })),
        intent,
      )
    ).map((r) => r.rows),
};

testStore("sqlite-async (query and batch only)", (clock) =>
  sqliteAsyncStore(connection, {
    driver: { engine: "sqlite-async", name: "SQLite" },
    factory: "test",
    options: { clock },
  }),
);
