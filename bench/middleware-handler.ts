import { pbkdf2Sync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";

/** The CPU work of the realistic handler, in µs: what a handler that validates, prices and renders might spend. */
const WORK_US = 200;
/** Where the bench driver leaves the handler's PBKDF2 iteration count for every server process it starts. */
export const ITERATIONS_ENV = "IDEMKEY_BENCH_ITERATIONS";

/**
 * How many PBKDF2 iterations make WORK_US of CPU here (the median of 21 runs). Measured by the bench driver only,
 * once per `npm run bench`: each server calibrating itself when it started did 840 to 1,183 iterations under the
 * load of that moment (issue 44), so that contenders did up to 30% different work per request.
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

/**
 * The bench driver's one iteration count: calibrated the first time and kept in the environment, which every
 * section and server process the driver starts inherits (so every contender does the same work).
 */
export function handlerIterations(): number {
  const given = process.env[ITERATIONS_ENV];
  if (given !== undefined) return givenIterations();
  const iterations = calibrate();
  process.env[ITERATIONS_ENV] = String(iterations);
  return iterations;
}

/** The count a server process was given by its driver; a server never calibrates its own. */
export function givenIterations(): number {
  const iterations = Number(process.env[ITERATIONS_ENV]);
  if (!Number.isInteger(iterations) || iterations < 1) {
    throw new Error(
      `bench server: ${ITERATIONS_ENV} must be the driver's iteration count, got ${process.env[ITERATIONS_ENV]}`,
    );
  }
  return iterations;
}

/** The handler's fixed CPU work: `iterations` PBKDF2 rounds, the same count in every contender. */
export function cpuWork(iterations = givenIterations()): () => void {
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
