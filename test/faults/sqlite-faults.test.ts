import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { holdWriteLock } from "../stores/fixtures/lock-holder.js";

/** Issue 11 case 7: another process holding the write lock, and a database that is full. */
const dir = mkdtempSync(join(tmpdir(), "idemkey-sqlite-faults-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const input = { fingerprint: "fp", token: "t", leaseMs: 1_000, ttlMs: 60_000 };

describe("SQLite faults", () => {
  it("waits for another process's write lock without freezing the event loop", async () => {
    const file = join(dir, "lock.db");
    const store = sqliteStore(file, { busyTimeoutMs: 60_000 });
    await store.get("warm-up"); // creates the table before the lock is taken
    const holder = await holdWriteLock(file, { wal: true });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    let settled = false;
    const claim = store.claim("k", input).finally(() => {
      settled = true;
    });
    // The claim is waiting; timers keep firing meanwhile (a synchronous wait would hold them all back).
    while (ticks < 5) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toBe(false);
    await holder.release();
    expect((await claim).status).toBe("claimed");
    clearInterval(timer);
    await store.close();
  });

  it("fails with a StoreError (cause SQLITE_BUSY) once the lock is held past busyTimeoutMs", async () => {
    const file = join(dir, "busy.db");
    const store = sqliteStore(file, { busyTimeoutMs: 200 });
    await store.get("warm-up");
    const holder = await holdWriteLock(file, { wal: true });
    try {
      const error = await store.claim("k", input).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({ store: "sqlite", operation: "claim", key: "k" });
      expect(((error as StoreError).cause as { code: string }).code).toMatch(/^SQLITE_BUSY/);
    } finally {
      await holder.release();
    }
    expect((await store.claim("k", input)).status).toBe("claimed");
    await store.close();
  });

  it("turns SQLITE_FULL into a StoreError, and the record it could not write stays unwritten", async () => {
    const file = join(dir, "full.db");
    const db = new BetterSqlite3(file);
    const store = sqliteStore(db);
    await store.get("warm-up");
    // A database that cannot grow: as a full disk looks to SQLite.
    const pages = db.pragma("page_count", { simple: true }) as number;
    db.pragma(`max_page_count = ${pages + 2}`);
    let error: unknown;
    for (let i = 0; i < 100 && error === undefined; i++) {
      error = await store
        .claim(`k${i}`, { ...input, data: "x".repeat(4_000) })
        .then(() => undefined)
        .catch((e: unknown) => e);
    }
    expect(error).toBeInstanceOf(StoreError);
    expect(((error as StoreError).cause as { code: string }).code).toBe("SQLITE_FULL");
    db.close();
  });
});
