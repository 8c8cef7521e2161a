/**
 * One process of `bench syscalls`: `count` fresh keyed calls on a SQLite file, through the harness or the
 * hand-written floor (INSERT of a pending record, then UPDATE to completed, on the same connection).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { createHarness, defineTool } from "../src/index.js";
import { sqliteStore } from "../src/sqlite/index.js";

const [mode, countText] = process.argv.slice(2);
const count = Number(countText);
const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-syscalls-"));
const db = new BetterSqlite3(join(dir, "ledger.db"));
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
const store = sqliteStore(db);
await store.get("create");
if (mode === "harness") {
  const harness = createHarness({ store });
  const tool = defineTool({ name: "send", effect: "keyed", run: (args: { n: number }) => args.n });
  for (let i = 0; i < count; i++) await harness.call("task", tool, { n: i });
} else {
  db.exec("CREATE TABLE floor (key TEXT PRIMARY KEY, state TEXT, result TEXT)");
  const insert = db.prepare("INSERT INTO floor (key, state) VALUES (?, 'pending') ON CONFLICT DO NOTHING");
  const complete = db.prepare("UPDATE floor SET state = 'completed', result = ? WHERE key = ?");
  for (let i = 0; i < count; i++) {
    insert.run(`k${i}`);
    complete.run(`${i}`, `k${i}`);
  }
}
db.close();
rmSync(dir, { recursive: true, force: true });
