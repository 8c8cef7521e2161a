import { pbkdf2Sync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";

/** The CPU work of the realistic handler, in µs: what a handler that validates, prices and renders might spend. */
const WORK_US = 200;

/**
 * How many PBKDF2 iterations make WORK_US of CPU here, measured once at start (the median of 21 runs): the handler
 * then does a fixed amount of work, so that load slows every row alike instead of changing what is measured.
 */
function calibrate(): number {
  const probe = 1_000;
  const times: number[] = [];
  for (let i = 0; i < 21; i++) {
    const start = performance.now();
    pbkdf2Sync("secret", "salt", probe, 32, "sha256");
    times.push(performance.now() - start);
  }
  const perIteration = (times.sort((a, b) => a - b)[10]! * 1000) / probe;
  return Math.max(1, Math.round(WORK_US / perIteration));
}

/** ~WORK_US of CPU work, calibrated once when made. */
export function cpuWork(): () => void {
  const iterations = calibrate();
  return () => void pbkdf2Sync("secret", "salt", iterations, 32, "sha256");
}

/**
 * The realistic handler's body: ~200 µs of CPU work and one INSERT into the owner's own SQLite table (a file in
 * WAL mode, synchronous NORMAL, as a small service would keep its charges), returning the new row's id.
 */
export function realisticWork(): { charge: (amount: number, currency: string) => number; close: () => void } {
  const cpu = cpuWork();
  const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-owner-"));
  const db = new BetterSqlite3(join(dir, "owner.db"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec("CREATE TABLE charges (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, currency TEXT NOT NULL)");
  const insert = db.prepare<[number, string], { id: number }>(
    "INSERT INTO charges (amount, currency) VALUES (?, ?) RETURNING id",
  );
  return {
    charge(amount, currency) {
      cpu();
      return insert.get(amount, currency)!.id;
    },
    close() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
