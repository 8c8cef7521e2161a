import BetterSqlite3 from "better-sqlite3";
import { expect } from "vitest";
import { runTogether, spawnWorker } from "../support/workers.js";

const claimer = new URL("./fixtures/claimer.ts", import.meta.url);

/**
 * Two OS processes claim the same 200 keys on the file at `path` (its schema already in place) through `driver`;
 * each key must be claimed exactly once in total, and the file itself, read apart from the store (through
 * better-sqlite3), must agree: each row carries the token of the worker that said it won.
 */
export async function expectTwoProcessRace(driver: "sqlite" | "node-sqlite", path: string): Promise<void> {
  const outputs = await runTogether(
    ["a", "b"].map((name) =>
      spawnWorker<{ worker: string; claimed: string[] }>(claimer, [driver, path, "200", name]),
    ),
  );
  const all = outputs.flatMap((o) => o.claimed);
  expect(new Set(all).size).toBe(all.length);
  expect(all.sort()).toEqual(Array.from({ length: 200 }, (_, i) => `race:${i}`).sort());
  const db = new BetterSqlite3(path, { readonly: true });
  const rows = db.prepare("SELECT key, token FROM idemkey_records WHERE key LIKE 'race:%'").all() as {
    key: string;
    token: string;
  }[];
  db.close();
  expect(rows).toHaveLength(200);
  for (const { key, token } of rows) {
    const winner = outputs.find((o) => o.claimed.includes(key))!;
    expect(token.startsWith(`${winner.worker}:`)).toBe(true);
  }
}
