/**
 * One process of `bench syscalls`: `SETUP` calls that every run makes alike (so that replays have records to find),
 * then `count` measured calls on a SQLite file in WAL mode, through the harness or a hand-written floor on the same
 * connection. The floors step from the minimal one towards the harness's table, to show where its writes come from.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { createHarness, defineTool } from "../src/index.js";
import { sqliteStore } from "../src/sqlite/index.js";

const SETUP = 2_000;

const [mode, countText] = process.argv.slice(2);
const count = Number(countText);
const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-syscalls-"));
const db = new BetterSqlite3(join(dir, "ledger.db"));
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
// "-own": the store opens the file itself, with the settings it gives a file it owns (its checkpoint interval).
const own = mode!.includes("-own");
const store = own ? sqliteStore(join(dir, "own.db")) : sqliteStore(db);
await store.get("create");

const harness = createHarness({ store });
const tool = defineTool({ name: "send", effect: "keyed", run: (args: { n: number }) => args.n });
// Keys and rows as the harness writes them: "call:" and a SHA-256, a data column of ~200 bytes.
const hashKey = (i: number) => `call:${createHash("sha256").update(`${i}`).digest("hex")}`;
const data = JSON.stringify({
  v: 1,
  taskId: "task",
  tool: "send",
  effect: "keyed",
  argsHash: "f".repeat(64),
  args: "{}",
});

/** A floor on a table of its own: `columns` and an index or not, INSERT of the pending row then UPDATE to completed. */
function floor(columns: string, index: boolean, key: (i: number) => string, wide: boolean) {
  db.exec(`CREATE TABLE floor (key TEXT PRIMARY KEY, ${columns}) WITHOUT ROWID`);
  if (index) db.exec("CREATE INDEX floor_expires_at ON floor (expires_at)");
  const insert = wide
    ? db.prepare(
        `INSERT INTO floor (key, state, fingerprint, token, data, expires_at) VALUES (?, 'pending', ?, ?, ?, ?)
         ON CONFLICT DO NOTHING`,
      )
    : db.prepare("INSERT INTO floor (key, state) VALUES (?, 'pending') ON CONFLICT DO NOTHING");
  const complete = wide
    ? db.prepare(
        "UPDATE floor SET state = 'completed', token = NULL, result = ?, expires_at = ? WHERE key = ?",
      )
    : db.prepare("UPDATE floor SET state = 'completed', result = ? WHERE key = ?");
  const select = db.prepare("SELECT state, result FROM floor WHERE key = ?");
  return {
    fresh(i: number) {
      const k = key(i);
      if (wide) {
        insert.run(k, k.slice(5), "96665c38-7978-4008-812b-d3f4ad80629d", data, Date.now() + 60_000);
        complete.run(`${i}`, Date.now() + 50_000, k);
      } else {
        insert.run(k);
        complete.run(`${i}`, k);
      }
    },
    replay: (i: number) => select.get(key(i)),
  };
}

const wideColumns = "state TEXT, fingerprint TEXT, token TEXT, result TEXT, data TEXT, expires_at INTEGER";
const floors: Record<string, () => ReturnType<typeof floor>> = {
  floor: () => floor("state TEXT, result TEXT", false, (i) => `k${i}`, false),
  "floor-keys": () => floor(wideColumns, false, hashKey, true),
  "floor-index": () => floor(wideColumns, true, hashKey, true),
};

const plain = mode!.replace("-own", "");
const [base, replaying] = plain.endsWith("-replay") ? [plain.slice(0, -7), true] : [plain, false];
if (base === "harness") {
  for (let i = 0; i < SETUP; i++) await harness.call("setup", tool, { n: i });
  for (let i = 0; i < count; i++) await harness.call(replaying ? "setup" : "task", tool, { n: i });
} else {
  const make = floors[base];
  if (make === undefined) throw new Error(`bench syscalls: unknown mode ${mode}`);
  const f = make();
  for (let i = 0; i < SETUP; i++) f.fresh(i + 1_000_000);
  for (let i = 0; i < count; i++) {
    if (replaying) f.replay(i + 1_000_000);
    else f.fresh(i);
  }
}
await store.close();
db.close();
rmSync(dir, { recursive: true, force: true });
