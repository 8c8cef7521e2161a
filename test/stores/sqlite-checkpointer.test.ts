import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import BetterSqlite3 from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { createCheckpointer } from "../../src/sqlite/checkpointer.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-checkpointer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const betterSqlite3 = createRequire(import.meta.url).resolve("better-sqlite3");

/** A file in WAL mode with `rows` rows in its log, none checkpointed (its connection never checkpoints). */
function logged(name: string, rows: number): BetterSqlite3.Database {
  const db = new BetterSqlite3(join(dir, name));
  db.pragma("journal_mode = WAL");
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)");
  const insert = db.prepare("INSERT INTO t VALUES (?, ?)");
  for (let i = 0; i < rows; i++) insert.run(`k${i}`, "x".repeat(500));
  return db;
}

describe("createCheckpointer", () => {
  it("copies the whole log back on its worker thread when asked, and stops", async () => {
    const db = logged("asked.db", 300);
    const failures: unknown[] = [];
    const checkpointer = createCheckpointer({
      path: join(dir, "asked.db"),
      module: betterSqlite3,
      onFailure: (error) => failures.push(error),
    });
    try {
      const result = await checkpointer.checkpoint();
      expect(result.busy).toBe(0);
      expect(result.log).toBeGreaterThan(30);
      expect(result.checkpointed).toBe(result.log);
      // The writer's connection sees the same: nothing left to copy.
      const [seen] = db.pragma("wal_checkpoint(PASSIVE)") as { log: number; checkpointed: number }[];
      expect(seen!.checkpointed).toBe(seen!.log);
    } finally {
      await checkpointer.stop();
      db.close();
    }
    // Stopped: asked again, it answers that it did not run, and reports no failure.
    expect(await checkpointer.checkpoint()).toMatchObject({ busy: 1 });
    expect(failures).toEqual([]);
  });

  it("reports once, through onFailure, a worker that cannot open the driver, and answers without hanging", async () => {
    const db = logged("broken.db", 10);
    const failures: unknown[] = [];
    const checkpointer = createCheckpointer({
      path: join(dir, "broken.db"),
      module: join(dir, "no-such-driver.js"),
      onFailure: (error) => failures.push(error),
    });
    try {
      expect(await checkpointer.checkpoint()).toMatchObject({ busy: 1 });
      expect(failures).toHaveLength(1);
      expect(String((failures[0] as Error).message)).toMatch(/no-such-driver/);
      expect(await checkpointer.checkpoint()).toMatchObject({ busy: 1 });
      expect(failures).toHaveLength(1);
    } finally {
      await checkpointer.stop();
      db.close();
    }
  });

  it("never keeps a process alive: one that leaves its store open exits once its work is done", async () => {
    const script = fileURLToPath(new URL("./fixtures/unclosed-store.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", script, join(dir, "unclosed.db")], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    // Generous: the bound is only there so that a process kept alive fails the test instead of hanging it.
    const kill = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const [code, signal] = (await once(child, "exit")) as [number | null, string | null];
    clearTimeout(kill);
    expect(output.trim()).toBe("written");
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  }, 90_000);
});
