import { closeSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors/index.js";
import { SOLO_WRITES } from "../../src/sqlite/group-commit.js";
import type { SqliteFileOptions } from "../../src/sqlite/options.js";
import type { RecordPatch, Store } from "../../src/store/types.js";
import { holdWriteLock } from "./fixtures/lock-holder.js";

const input = { fingerprint: "fp", token: "t1", leaseMs: 60_000, ttlMs: 60_000 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Claims "k" on the store `open` gives while `holder` keeps the write lock: timers keep firing meanwhile (a
 * synchronous wait would hold them all back) and the claim is still waiting after five of them; once the lock is
 * released, the claim goes through. The lock is released whatever happens.
 */
async function claimsOnceFree(holder: { release(): Promise<void> }, open: () => Store): Promise<void> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 5);
  try {
    let settled = false;
    const claim = open()
      .claim("k", input)
      .finally(() => {
        settled = true;
      });
    const seen = ticks;
    while (ticks < seen + 5) await sleep(5);
    expect(settled).toBe(false);
    await holder.release();
    expect((await claim).status).toBe("claimed");
  } finally {
    clearInterval(timer);
    await holder.release();
  }
}

/**
 * The commits in a database's write-ahead log, read from the file itself: frames whose header names the database's
 * size after a commit, up to the first frame of an earlier generation of the log (another salt) or its end.
 */
function commitsInLog(path: string): number {
  const fd = openSync(`${path}-wal`, "r");
  try {
    const header = Buffer.alloc(32);
    if (readSync(fd, header, 0, 32, 0) < 32) return 0;
    const pageSize = header.readUInt32BE(8);
    const salt = header.subarray(16, 24);
    const frame = Buffer.alloc(24);
    let commits = 0;
    for (let at = 32; readSync(fd, frame, 0, 24, at) === 24; at += 24 + pageSize) {
      if (!frame.subarray(8, 16).equals(salt)) break;
      if (frame.readUInt32BE(4) !== 0) commits++;
    }
    return commits;
  } finally {
    closeSync(fd);
  }
}

/**
 * What both SQLite stores (better-sqlite3's and node:sqlite's) promise about locks and writes, beyond the contract:
 * replays take no write lock, a completion writes only the columns it changes, and opening a file another process
 * holds locked waits asynchronously within `busyTimeoutMs`.
 */
export function testSqliteHotPath(
  name: string,
  dir: string,
  open: (path: string, options?: SqliteFileOptions) => Store,
): void {
  const file = (what: string) => join(dir, `${name.replace(/\W+/g, "-")}-${what}.db`);

  describe(`${name}: hot path and locks`, () => {
    it("answers a replay and a running key from a read, without the write lock another process holds", async () => {
      const path = file("replay");
      // No budget to wait for a lock: any claim that needed it would fail at once.
      const store = open(path, { busyTimeoutMs: 0 });
      await store.claim("done", input);
      await store.update(
        "done",
        { token: "t1" },
        { state: "completed", token: null, leaseMs: null, result: "1" },
      );
      await store.claim("running", input);
      const holder = await holdWriteLock(path, { wal: true });
      try {
        expect(await store.claim("done", { ...input, token: "t2" })).toMatchObject({
          status: "exists",
          record: { state: "completed", result: "1" },
        });
        expect(await store.claim("running", { ...input, token: "t3" })).toMatchObject({
          status: "exists",
          record: { state: "pending", token: "t1" },
        });
        // A new key does need the lock: so the lock was real.
        await expect(store.claim("fresh", input)).rejects.toBeInstanceOf(StoreError);
      } finally {
        await holder.release();
      }
      expect((await store.claim("fresh", input)).status).toBe("claimed");
      await store.close();
    });

    it("waits for a write lock another process holds without blocking timers, then claims; a failure rejects", async () => {
      const path = file("busy-claim");
      const store = open(path, { busyTimeoutMs: 20_000 });
      await store.get("k"); // opened and in WAL mode before the lock is taken
      await claimsOnceFree(await holdWriteLock(path, { wal: true }), () => store);
      await store.close();
      // A failing first try (here: a closed file) is a rejected promise, never a synchronous throw.
      let failed: Promise<unknown> | undefined;
      expect(() => {
        failed = store.get("k");
      }).not.toThrow();
      await expect(failed).rejects.toThrow(); // TypeError (better-sqlite3) or StoreError (node:sqlite)
    });

    it("completes with one UPDATE of the columns that change: the record's data is not written again", async () => {
      const path = file("changed");
      const store = open(path, { table: "changed" });
      await store.claim("k", { ...input, data: '{"args":"{}"}' });
      // Triggers another connection adds: an independent record of which columns each write set.
      const db = new BetterSqlite3(path);
      db.exec(`CREATE TABLE written (col TEXT);
        CREATE TRIGGER data_written AFTER UPDATE OF data ON changed BEGIN INSERT INTO written VALUES ('data'); END;
        CREATE TRIGGER result_written AFTER UPDATE OF result ON changed BEGIN INSERT INTO written VALUES ('result'); END;`);
      try {
        const done = await store.update(
          "k",
          { token: "t1", state: "pending" },
          { state: "completed", token: null, leaseMs: null, attempts: 1, result: "42", ttlMs: 120_000 },
        );
        expect(done).toMatchObject({
          key: "k",
          state: "completed",
          token: null,
          leaseUntil: null,
          attempts: 1,
          result: "42",
          data: '{"args":"{}"}',
        });
        expect(done!.expiresAt - done!.updatedAt).toBe(120_000);
        expect(await store.get("k")).toEqual(done);
        expect(db.prepare("SELECT col FROM written").pluck().all()).toEqual(["result"]);
        // A patch that names data writes it; one whose expectation fails writes nothing.
        await store.update("k", {}, { data: "{}" });
        expect(await store.update("k", { token: "someone" }, { result: "no" })).toBeUndefined();
        expect(db.prepare("SELECT col FROM written").pluck().all()).toEqual(["result", "data"]);
      } finally {
        db.close();
        await store.close();
      }
    });

    it("completes without writing the purge index: one page in the log, the record's own", async () => {
      const path = file("one-page");
      const store = open(path, { table: "one_page" });
      // Enough records that the table and its index span several pages, so that a page written is a page named.
      for (let i = 0; i < 300; i++) await store.claim(`k${i}`, { ...input, data: "x".repeat(200) });
      const db = new BetterSqlite3(path);
      try {
        // Pages in the log since it was last emptied, then emptied (TRUNCATE reports 0 once it has truncated).
        const frames = () => {
          const [row] = db.pragma("wal_checkpoint(PASSIVE)") as { busy: number; log: number }[];
          const [reset] = db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[];
          expect([row!.busy, reset!.busy]).toEqual([0, 0]);
          return row!.log;
        };
        frames(); // the log emptied: what follows is the completion's alone
        await store.update(
          "k150",
          { token: "t1", state: "pending" },
          { state: "completed", token: null, leaseMs: null, attempts: 1, result: "42", ttlMs: 120_000 },
        );
        expect(frames()).toBe(1);
        // A claim of a new key does write the index, so the count above measured something.
        await store.claim("k150b", input);
        expect(frames()).toBeGreaterThan(1);
      } finally {
        db.close();
        await store.close();
      }
    });

    it("commits the writes that arrive together in one turn as 2: the first alone, then the other 7 together", async () => {
      const path = file("grouped");
      const store = open(path, { table: "grouped" });
      await store.get("k"); // the table made, so that only the writes below are in the log
      const db = new BetterSqlite3(path);
      const emptyLog = () =>
        expect(db.pragma("wal_checkpoint(TRUNCATE)")).toEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
      const keys = Array.from({ length: 8 }, (_, i) => `k${i}`);
      const done = { state: "completed", token: null, leaseMs: null, attempts: 1, result: "1" } as const;
      try {
        emptyLog();
        const claims = await Promise.all(keys.map((key) => store.claim(key, input)));
        expect(claims.map((claim) => claim.status)).toEqual(keys.map(() => "claimed"));
        expect(commitsInLog(path)).toBe(2);
        emptyLog();
        const completions = await Promise.all(keys.map((key) => store.update(key, { token: "t1" }, done)));
        expect(completions.map((record) => record?.state)).toEqual(keys.map(() => "completed"));
        expect(commitsInLog(path)).toBe(2);
        // Written as the store reported them, read by another connection.
        expect(db.prepare("SELECT count(*) FROM grouped WHERE state = 'completed'").pluck().get()).toBe(8);
        // One after another, each write is a commit of its own: so the count above measured something.
        emptyLog();
        for (const key of keys) await store.claim(`${key}-alone`, input);
        expect(commitsInLog(path)).toBe(8);
      } finally {
        db.close();
        await store.close();
      }
    });

    it("stops making a lone caller's completion wait a turn once its groups are of one, and groups a burst again", async () => {
      const path = file("solo");
      const store = open(path, { table: "solo" });
      await store.get("k");
      const db = new BetterSqlite3(path);
      const state = (key: string) => db.prepare("SELECT state FROM solo WHERE key = ?").pluck().get(key);
      const emptyLog = () =>
        expect(db.pragma("wal_checkpoint(TRUNCATE)")).toEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
      const done = { state: "completed", token: null, leaseMs: null, attempts: 1, result: "1" } as const;
      const turn = () => new Promise((resolve) => setImmediate(resolve));
      // A claim and its completion in one turn, as a synchronous tool makes them: whether the completion was
      // committed before the caller awaited it, or waited for a group.
      const claimAndComplete = async (key: string) => {
        await turn();
        await store.claim(key, input);
        const completion = store.update(key, { token: "t1" }, done);
        const atOnce = state(key) === "completed";
        expect((await completion)?.state).toBe("completed");
        return atOnce;
      };
      try {
        // Two groups of one in a row, then the completions run at once, all but one in SOLO_WRITES.
        const waited = [];
        for (let i = 0; i < 2 + 2 * SOLO_WRITES; i++) waited.push(!(await claimAndComplete(`lone${i}`)));
        const expected = waited.map((_, i) => i < 2 || (i - 2) % SOLO_WRITES === SOLO_WRITES - 1);
        expect(waited).toEqual(expected);
        // A burst of 40 writes in one turn, the writes still to run alone now SOLO_WRITES - 1: the first runs alone
        // as always, those SOLO_WRITES - 1 alone, the rest wait and commit together.
        await turn();
        emptyLog();
        const burst = Array.from({ length: 40 }, (_, i) => `burst${i}`);
        await Promise.all(burst.map((key) => store.claim(key, input)));
        expect(commitsInLog(path)).toBe(1 + (SOLO_WRITES - 1) + 1);
        // That group was not of one: the next burst is grouped at once, as on a store just opened.
        await turn();
        emptyLog();
        await Promise.all(burst.map((key) => store.update(key, { token: "t1" }, done)));
        expect(commitsInLog(path)).toBe(2);
        expect(db.prepare("SELECT count(*) FROM solo WHERE state = 'completed'").pluck().get()).toBe(
          2 + 2 * SOLO_WRITES + 40,
        );
      } finally {
        db.close();
        await store.close();
      }
    });

    it("commits a lone write at once: another connection sees it before the caller awaits it", async () => {
      const path = file("lone");
      const store = open(path, { table: "lone" });
      await store.get("k");
      await new Promise((resolve) => setImmediate(resolve)); // a new turn, as a caller between two requests
      const db = new BetterSqlite3(path, { readonly: true });
      try {
        const claim = store.claim("k", input);
        expect(db.prepare("SELECT token FROM lone WHERE key = 'k'").pluck().get()).toBe("t1");
        expect((await claim).status).toBe("claimed");
        await new Promise((resolve) => setImmediate(resolve));
        const done = store.update("k", { token: "t1" }, { state: "completed", token: null, leaseMs: null });
        expect(db.prepare("SELECT state FROM lone WHERE key = 'k'").pluck().get()).toBe("completed");
        await done;
      } finally {
        db.close();
        await store.close();
      }
    });

    it("fails a write that fails inside a group alone: the others in it commit, once", async () => {
      const path = file("grouped-refusal");
      const store = open(path, { table: "refusing" });
      await store.get("k");
      // A trigger another connection adds refuses one key: a failure of that write's own, mid-group.
      const db = new BetterSqlite3(path);
      db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON refusing WHEN NEW.key = 'refused'
        BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END;`);
      try {
        db.pragma("wal_checkpoint(TRUNCATE)");
        // "a" runs alone; "b", "refused" and "c" are a group.
        const [a, b, refused, c] = await Promise.allSettled(
          ["a", "b", "refused", "c"].map((key) => store.claim(key, input)),
        );
        expect(a).toMatchObject({ status: "fulfilled", value: { status: "claimed" } });
        expect(b).toMatchObject({ status: "fulfilled", value: { status: "claimed" } });
        expect(c).toMatchObject({ status: "fulfilled", value: { status: "claimed" } });
        expect(refused?.status).toBe("rejected");
        const error = (refused as PromiseRejectedResult).reason;
        expect(error).toBeInstanceOf(StoreError);
        expect(error.message).toMatch(/claim/);
        expect(commitsInLog(path)).toBe(2);
        expect(db.prepare("SELECT key FROM refusing ORDER BY key").pluck().all()).toEqual(["a", "b", "c"]);
      } finally {
        db.close();
        await store.close();
      }
    });

    it("runs each write of a group alone when another process holds the write lock, each once it is free", async () => {
      const path = file("grouped-busy");
      const store = open(path, { table: "busy", busyTimeoutMs: 20_000 });
      await store.get("k");
      const holder = await holdWriteLock(path, { wal: true });
      const keys = ["a", "b", "c", "d", "e"];
      let claims: Promise<unknown>[] = [];
      try {
        claims = keys.map((key) => store.claim(key, input));
        await sleep(100);
      } finally {
        await holder.release();
      }
      expect((await Promise.all(claims)).map((claim) => (claim as { status: string }).status)).toEqual(
        keys.map(() => "claimed"),
      );
      const db = new BetterSqlite3(path, { readonly: true });
      try {
        expect(db.prepare("SELECT key FROM busy ORDER BY key").pluck().all()).toEqual(keys);
      } finally {
        db.close();
        await store.close();
      }
    });

    it("runs the writes still waiting for their group when it closes", async () => {
      const path = file("grouped-close");
      const store = open(path, { table: "closing" });
      await store.get("k");
      const claim = store.claim("k", input);
      await store.close();
      expect((await claim).status).toBe("claimed");
      const reopened = open(path, { table: "closing" });
      expect(await reopened.get("k")).toMatchObject({ state: "pending", token: "t1" });
      await reopened.close();
    });

    it("migrates a version 1 table in place: records kept, purge removes the expired and keeps the live", async () => {
      const path = file("v1");
      const db = new BetterSqlite3(path);
      db.pragma("journal_mode = WAL");
      // Version 1 as 0.1 created it, with one expired record and one live one.
      db.exec(`CREATE TABLE idemkey_meta (name TEXT PRIMARY KEY, version INTEGER NOT NULL);
        INSERT INTO idemkey_meta VALUES ('old', 1);
        CREATE TABLE old (key TEXT PRIMARY KEY, state TEXT NOT NULL, fingerprint TEXT NOT NULL, token TEXT,
          lease_until INTEGER, attempts INTEGER NOT NULL, result TEXT, data TEXT, created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
        CREATE INDEX old_expires_at ON old (expires_at);`);
      const now = 1_000_000;
      const insert = db.prepare(
        "INSERT INTO old VALUES (?, 'completed', 'fp', NULL, NULL, 1, '1', NULL, ?, ?, ?)",
      );
      insert.run("gone", now - 10, now - 10, now - 1);
      insert.run("kept", now - 10, now - 10, now + 60_000);
      let clock = now;
      const store = open(path, { table: "old", clock: () => clock });
      try {
        expect(await store.get("kept")).toMatchObject({
          state: "completed",
          result: "1",
          expiresAt: now + 60_000,
        });
        expect(db.prepare("SELECT version FROM idemkey_meta WHERE name = 'old'").pluck().get()).toBe(2);
        expect(await store.purge({ limit: 10 })).toBe(1);
        expect(await store.get("kept")).toBeDefined();
        expect(await store.purge({ limit: 10 })).toBe(0);
        clock = now + 60_000;
        expect(await store.purge({ limit: 10 })).toBe(1);
        expect(await store.list()).toEqual([]);
      } finally {
        db.close();
        await store.close();
      }
    });

    it("checkpoints a file it opens on a worker thread, while no write runs on the event loop", async () => {
      const path = file("checkpoint");
      const store = open(path, { table: "checkpointed" });
      // The wal-index (the -shm file, SQLite's documented layout, native byte order): the log's last frame
      // (mxFrame, byte 16 of the header) and how many frames a checkpoint copied back into the file (nBackfill,
      // byte 96). A checkpoint in a commit would restart the log at the next write; here none would be due before
      // 40,000 pages.
      const walIndex = () => {
        const fd = openSync(`${path}-shm`, "r");
        try {
          const header = Buffer.alloc(100);
          readSync(fd, header, 0, 100, 0);
          return { frames: header.readUInt32LE(16), backfilled: header.readUInt32LE(96) };
        } finally {
          closeSync(fd);
        }
      };
      // About five pages a claim with 2 KB of data: past the 1,000 writes that start the checkpointer.
      const data = "x".repeat(2_000);
      const claims = 1_500;
      for (let n = 0; n < claims; n++) {
        expect((await store.claim(`k${n}`, { ...input, data })).status).toBe("claimed");
      }
      const written = walIndex();
      expect(written.frames).toBeGreaterThan(claims);
      expect(written.frames).toBeLessThan(40_000);
      // Nothing is written from here on: only the worker can copy the log back.
      for (let polls = 0; walIndex().backfilled < written.frames; polls++) {
        if (polls > 1_000) throw new Error(`no checkpoint ran: ${JSON.stringify(walIndex())}`);
        await sleep(20);
      }
      expect(walIndex()).toEqual({ frames: written.frames, backfilled: written.frames });
      await store.close();
      const reopened = open(path, { table: "checkpointed" });
      expect((await reopened.list({ limit: 10_000 })).length).toBe(claims);
      await reopened.close();
    });

    it("returns from every update the record as stored, field for field and in the order get() gives it", async () => {
      const path = file("returned");
      const store = open(path, { table: "returned" });
      const patches: RecordPatch[] = [
        {},
        { state: "completed", token: null, leaseMs: null, attempts: 1, result: "42", ttlMs: 120_000 },
        { leaseMs: 5_000, ttlMs: 65_000 },
        { data: '{"x":1}' },
        { result: null },
        { token: "t9", attempts: 3 },
        { state: "outcome_unknown", leaseMs: null },
      ];
      for (const [i, patch] of patches.entries()) {
        const key = `k${i}`;
        await store.claim(key, { ...input, data: '{"args":"{}"}' });
        const updated = await store.update(key, { token: "t1" }, patch);
        const stored = await store.get(key);
        expect(updated, JSON.stringify(patch)).toEqual(stored);
        expect(Object.keys(updated!)).toEqual(Object.keys(stored!));
      }
      expect(await store.update("k0", { token: "nobody" }, { result: "x" })).toBeUndefined();
      await store.close();
    });

    it("opens a file another process holds locked without freezing the event loop, and works once it is free", async () => {
      const path = file("open-locked");
      // A new file, not yet in WAL mode: its write lock makes the switch to WAL answer SQLITE_BUSY.
      const holder = await holdWriteLock(path);
      let store: Store | undefined;
      try {
        await claimsOnceFree(holder, () => {
          store = open(path, { busyTimeoutMs: 20_000 });
          return store;
        });
      } finally {
        await store?.close();
      }
      const db = new BetterSqlite3(path);
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
      db.close();
    });

    it("fails the first operation with a StoreError when the lock at open outlasts busyTimeoutMs", async () => {
      const path = file("open-busy");
      const holder = await holdWriteLock(path);
      let store: Store | undefined;
      try {
        store = open(path, { busyTimeoutMs: 200 });
        const error = await store.get("k").catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StoreError);
        expect(String((error as StoreError).message)).toMatch(/locked|busy/i);
      } finally {
        await holder.release();
      }
      expect((await store.claim("k", input)).status).toBe("claimed");
      await store.close();
    });
  });
}
