import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { CHECKPOINT_PAGES } from "../src/sqlite/checkpointer.js";
import { sqliteStore } from "../src/sqlite/index.js";
import type { Store } from "../src/store/types.js";
import { printTable } from "./table.js";

const CALLS = 20_000;
const BLOCK = 2_000;
const STALL_MS = 5;
const input = {
  fingerprint: "f".repeat(64),
  token: "t",
  leaseMs: 30_000,
  ttlMs: 86_400_000,
  data: "x".repeat(300),
};
const done = {
  state: "completed",
  token: null,
  leaseMs: null,
  result: "r".repeat(400),
  ttlMs: 86_400_000,
} as const;

/**
 * A claim and a completion of new keys, one after the other, on a file the store opens (its checkpoints on a worker
 * thread) beside the same store on a `Database` passed in with SQLite's own checkpoints every 4,000 pages, inside
 * a commit (what a file the store opened had before): the waits a checkpoint adds to the event loop.
 */
export async function benchCheckpoints(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-checkpoints-"));
  const own = new BetterSqlite3(join(dir, "own.db"));
  own.pragma("journal_mode = WAL");
  own.pragma("synchronous = NORMAL");
  own.pragma(`wal_autocheckpoint = ${CHECKPOINT_PAGES}`);
  const contenders: [string, Store, number[]][] = [
    ["worker thread", sqliteStore(join(dir, "worker.db")), []],
    ["in the commit", sqliteStore(own), []],
  ];
  // In alternating blocks, so that load changes both alike.
  for (let start = 0; start < CALLS; start += BLOCK) {
    for (const [, store, times] of contenders) {
      for (let i = 0; i < BLOCK; i++) {
        const key = `http:${randomUUID()}`;
        const begun = performance.now();
        await store.claim(key, input);
        await store.update(key, { token: "t" }, done);
        times.push(performance.now() - begun);
      }
    }
  }
  const rows = contenders.map(([name, , times]) => {
    const sorted = [...times].sort((a, b) => a - b);
    const stalls = sorted.filter((t) => t > STALL_MS);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
    return [
      name,
      (at(0.5) * 1000).toFixed(0),
      at(0.999).toFixed(2),
      sorted.at(-1)!.toFixed(1),
      `${stalls.length}`,
      sum(stalls).toFixed(0),
      sum(times).toFixed(0),
    ];
  });
  printTable(
    `SQLite checkpoints: ${CALLS} claims + completions of new keys (ms unless said)`,
    ["checkpoints", "p50 µs", "p99.9", "longest", `over ${STALL_MS} ms`, "their sum", "all"],
    rows,
  );
  for (const [, store] of contenders) await store.close();
  own.close();
  rmSync(dir, { recursive: true, force: true });
}
