import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness, defineTool } from "../../src/index.js";
import { scanner } from "../../src/inspector/snapshot.js";
import { postgresStore } from "../../src/postgres/index.js";
import { redisStore } from "../../src/redis/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { memoryStore } from "../../src/store/memory.js";
import type { Store } from "../../src/store/types.js";
import { postgresService, redisService } from "../support/services.js";

/**
 * The inspector's scanner reads what changed since its last read (`store.changes`) instead of every record per
 * poll, on every store that has it. What it reads is counted by a wrapper around the store, apart from the
 * scanner: records returned by `list` and calls of `changes`. The store's `changes` itself is the contract
 * suite's (test/stores/contract.ts).
 */
function counted(store: Store, withChanges = true) {
  const reads = { listed: 0, changesCalls: 0 };
  const wrapped: Store = {
    ...store,
    async list(query) {
      const page = await store.list(query);
      reads.listed += page.length;
      return page;
    },
    changes: withChanges
      ? async (query) => {
          reads.changesCalls++;
          return store.changes!(query);
        }
      : undefined,
  };
  return { store: wrapped, reads };
}

const send = defineTool({
  name: "sendMessage",
  effect: "keyed",
  run: (args: { n: number }) => ({ id: args.n }),
});
const dir = mkdtempSync(join(tmpdir(), "idemkey-scanner-"));
const run = randomBytes(4).toString("hex");
const [postgres, redis] = await Promise.all([postgresService(), redisService()]);
const pool = new pg.Pool({ connectionString: postgres.url, max: 4 });
const io = new Redis(redis.url, { lazyConnect: true });
if (!redis.skip) await io.connect();
/** A table or a prefix of its own per scanner, each removed at the end. */
let opened = 0;
const tables: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (!postgres.skip && tables.length > 0) {
    await pool.query(`DROP TABLE IF EXISTS ${tables.map((t) => `"${t}"`).join(", ")}`);
    await pool.query("DELETE FROM idemkey_meta WHERE name = ANY($1)", [tables]);
  }
  await pool.end();
  if (!redis.skip) {
    const found = await io.keys(`\\{idemkey-scanner-${run}-*`);
    for (let i = 0; i < found.length; i += 500) await io.del(...found.slice(i, i + 500));
  }
  io.disconnect();
});

/** Each store on the given clock, and why it is skipped (a server that does not answer outside CI). */
const stores: [string, (clock: () => number) => Store, string | undefined][] = [
  ["memory", (clock) => memoryStore({ clock }), undefined],
  ["sqlite", (clock) => sqliteStore(join(dir, `${opened++}.db`), { clock }), undefined],
  [
    "postgres",
    (clock) => {
      const table = `idemkey_scanner_${run}_${opened++}`;
      tables.push(table);
      return postgresStore(pool, { clock, table });
    },
    postgres.skip,
  ],
  [
    "redis",
    (clock) => redisStore(io, { clock, prefix: `{idemkey-scanner-${run}-${opened++}}:` }),
    redis.skip,
  ],
];

for (const [name, open, skip] of stores) {
  (skip ? describe.skip : describe)(`the inspector's scanner on ${name}`, () => {
    async function setup(count: number, withChanges = true) {
      let now = 1_000_000;
      const clock = () => now;
      const base = open(clock);
      const harness = createHarness({ store: base, clock, ttlMs: 600_000 });
      for (let i = 0; i < count; i++) await harness.call("task-a", send, { n: i });
      const { store, reads } = counted(base, withChanges);
      const scan = scanner(store, 10_000, clock);
      const first = await scan.latest(0);
      expect(first.rows).toHaveLength(count);
      reads.listed = 0;
      reads.changesCalls = 0;
      // A poll a moment later: `latest(0)` answers from the last read made at the same instant.
      const poll = () => {
        now += 1;
        return scan.latest(0);
      };
      return { base, harness, scan, poll, reads, advance: (ms: number) => (now += ms) };
    }

    it("after the first read, a poll reads only the records that changed, and a new call is in it", async () => {
      const { harness, poll, reads, advance } = await setup(40);
      const before = await poll();
      expect(reads).toEqual({ listed: 0, changesCalls: 1 });
      expect(before.changed).toEqual([]);

      advance(1_000);
      await harness.call("task-b", send, { n: 1000 });
      const key = harness.key("task-b", send, { n: 1000 });
      const after = await poll();
      expect(after.rows).toHaveLength(41);
      expect(after.changed).toEqual([key]);
      expect(after.version).toBe(before.version + 1);
      expect(reads.listed).toBe(0);
    });

    it("a poll with nothing changed keeps the version and reads no record in full", async () => {
      const { poll, reads, advance } = await setup(30);
      const one = await poll();
      advance(10_000);
      const two = await poll();
      expect(two.version).toBe(one.version);
      expect(two.at).toBeGreaterThan(one.at);
      expect(reads.listed).toBe(0);
    });

    it("sees a record that went away (deleted, or expired) by listing everything again", async () => {
      const { base, harness, poll, reads, advance } = await setup(20);
      const gone = harness.key("task-a", send, { n: 3 });
      expect(await base.delete(`call:${gone}`, {})).toBe(true);
      const after = await poll();
      expect(after.rows).toHaveLength(19);
      expect(after.rows.map((r) => r.entry.key)).not.toContain(gone);
      expect(after.changed).toEqual([gone]);
      expect(reads.listed).toBe(19);

      // Past the retention every record expires: the live count falls to zero, and the rows with it.
      advance(601_000);
      expect((await poll()).rows).toEqual([]);
    });

    it("drops a record past its expiry on the store's clock without listing everything", async () => {
      const { base, poll, reads, advance } = await setup(8);
      let now = 0;
      const shortLived = createHarness({ store: base, clock: () => 1_000_000 + now, ttlMs: 10_000 });
      await shortLived.call("task-brief", send, { n: 1 });
      await shortLived.call("task-brief", send, { n: 2 });
      expect((await poll()).rows).toHaveLength(10);
      advance(11_000);
      now = 11_000;
      reads.listed = 0;
      const after = await poll();
      expect(after.rows).toHaveLength(8);
      expect(after.changed.sort()).toEqual(
        [shortLived.key("task-brief", send, { n: 1 }), shortLived.key("task-brief", send, { n: 2 })].sort(),
      );
      expect(reads.listed).toBe(0);
    });

    it("records what it saw change on a record read through changes (attempts, state)", async () => {
      const { base, harness, scan, poll, reads, advance } = await setup(5);
      const key = harness.key("task-a", send, { n: 2 });
      advance(500);
      const updated = await base.update(`call:${key}`, {}, { attempts: 3, state: "outcome_unknown" });
      expect(updated?.attempts).toBe(3);
      const after = await poll();
      expect(after.changed).toEqual([key]);
      expect(reads.listed).toBe(0);
      expect(scan.observations(key)).toEqual([
        { type: "attempts", at: updated!.updatedAt, attempts: 3 },
        { type: "state", at: updated!.updatedAt, from: "completed", to: "outcome_unknown" },
      ]);
    });

    it("lists everything again once a minute even when changes says nothing went away", async () => {
      const { poll, reads, advance } = await setup(12);
      advance(30_000);
      await poll();
      expect(reads.listed).toBe(0);
      advance(31_000);
      await poll();
      expect(reads.listed).toBe(12);
    });

    it("after a burst of more changes than a page holds, goes back to reading changes once the burst is past", async () => {
      const { harness, poll, reads, advance } = await setup(10);
      for (let i = 0; i < 600; i++) await harness.call("task-burst", send, { n: i });
      expect((await poll()).rows).toHaveLength(610);
      expect(reads.listed).toBe(610);
      // The next poll asks for changes since 5 s before the last, still the burst: everything once more, at most.
      advance(6_000);
      await poll();
      reads.listed = 0;
      await harness.call("task-b", send, { n: -1 });
      const after = await poll();
      expect(after.rows).toHaveLength(611);
      expect(after.changed).toEqual([harness.key("task-b", send, { n: -1 })]);
      expect(reads.listed).toBe(0);
    });

    it("on a store without changes, lists every record per poll and still sees each change", async () => {
      const { harness, poll, reads, advance } = await setup(25, false);
      advance(100);
      await harness.call("task-b", send, { n: 99 });
      const after = await poll();
      expect(after.changed).toEqual([harness.key("task-b", send, { n: 99 })]);
      expect(reads).toEqual({ listed: 26, changesCalls: 0 });
    });
  });
}
