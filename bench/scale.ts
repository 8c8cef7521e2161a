import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { createHarness } from "../src/harness/create-harness.js";
import { idempotencyEngine } from "../src/owner/engine.js";
import { postgresStore } from "../src/postgres/index.js";
import { redisStore } from "../src/redis/index.js";
import { sqliteStore } from "../src/sqlite/index.js";
import { memoryStore } from "../src/store/memory.js";
import type { Store } from "../src/store/types.js";
import { median } from "./rounds.js";
import { connectPostgres, connectRedis, deleteKeys } from "./services.js";
import { REDIS_PREFIX, RUN_ID } from "./stores.js";
import { printTable } from "./table.js";

const PAGED = 100_000;
const PURGED = 500_000;
/** Fewer on the shared Redis, whose memory the other engineers' tests use too (each record is a hash and two index entries). */
const PURGED_REDIS = 100_000;
/**
 * A few days of an agent platform's calls, kept for retries hours or days later (the harness keeps 7 days, the
 * middleware 24 hours): ~700k calls a day on SQLite. Fewer on the shared PostgreSQL and Redis, as above.
 */
const RETAINED = { sqlite: 2_000_000, postgres: 1_000_000, redis: 200_000 };
const key = (i: number) => `k:${String(i).padStart(7, "0")}`;

/** Median µs of `runs` calls of `list` starting after `after` (undefined: the first page). */
async function pageCost(store: Store, after: string | undefined, runs = 25): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    const page = await store.list({ after, limit: 100 });
    times.push((performance.now() - start) * 1000);
    if (page.length === 0) throw new Error("bench scale: an empty page means the table was not filled");
  }
  return median(times);
}

/** Fills a better-sqlite3 table the store created, in one transaction (claims one by one would take minutes). */
function fillSqlite(db: BetterSqlite3.Database, table: string, count: number, expiresAt: number) {
  const insert = db.prepare(
    `INSERT INTO ${table} (key, state, fingerprint, token, lease_until, attempts, result, data, created_at,
       updated_at, expires_at) VALUES (?, 'completed', 'f', NULL, NULL, 1, '1', NULL, 0, 0, ?)`,
  );
  db.transaction(() => {
    for (let i = 0; i < count; i++) insert.run(key(i), expiresAt);
  })();
}

/**
 * Claims `count` records through the store, 1,000 at a time (ioredis pipelines them); a store on a clock in the
 * past makes them expired ones.
 */
async function fillRedis(store: Store, count: number): Promise<void> {
  const input = { fingerprint: "f", token: "t", leaseMs: 1_000, ttlMs: 3_600_000, state: "pending" as const };
  for (let i = 0; i < count; i += 1_000) {
    const batch = Array.from({ length: Math.min(1_000, count - i) }, (_, j) =>
      store.claim(key(i + j), input),
    );
    await Promise.all(batch);
  }
}

async function benchPaging(): Promise<void> {
  const rows: string[][] = [];
  const far = Date.now() + 3_600_000;
  // The two pages take turns, the first turn a warm-up: measured once each, one after the other, the last page of
  // the memory store came out 2.5x the first, its code path (an `after` bound) still being compiled.
  const record = async (name: string, store: Store) => {
    const starts: number[] = [];
    const ends: number[] = [];
    for (let turn = 0; turn < 6; turn++) {
      const start = await pageCost(store, undefined);
      const end = await pageCost(store, key(PAGED - 150));
      if (turn === 0) continue;
      starts.push(start);
      ends.push(end);
    }
    const [start, end] = [median(starts), median(ends)];
    rows.push([name, start.toFixed(0), end.toFixed(0), (end / start).toFixed(2)]);
  };

  const memory = memoryStore();
  for (let i = 0; i < PAGED; i++) {
    await memory.claim(key(i), { fingerprint: "f", token: "t", leaseMs: 1_000, ttlMs: 3_600_000 });
  }
  await record("memory", memory);

  const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-scale-"));
  try {
    const db = new BetterSqlite3(join(dir, "paging.db"));
    const store = sqliteStore(db, { table: "paged" });
    await store.get("create");
    fillSqlite(db, "paged", PAGED, far);
    await record("SQLite file", store);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const pool = await connectPostgres();
  if (pool) {
    const table = `idemkey_bench_paged_${RUN_ID}`;
    try {
      const store = postgresStore(pool, { table });
      await store.get("create");
      await pool.query(
        `INSERT INTO ${table} (key, state, fingerprint, token, lease_until, attempts, result, data, created_at,
           updated_at, expires_at)
         SELECT 'k:' || lpad(i::text, 7, '0'), 'completed', 'f', NULL, NULL, 1, '1', NULL, 0, 0, $1::bigint
         FROM generate_series(0, $2::integer - 1) AS i`,
        [far, PAGED],
      );
      await pool.query(`ANALYZE ${table}`);
      await record("PostgreSQL", store);
    } finally {
      await pool.query(`DROP TABLE IF EXISTS ${table}`);
      await pool.query("DELETE FROM idemkey_meta WHERE name = $1", [table]);
      await pool.end();
    }
  }
  const redis = await connectRedis();
  if (redis) {
    const prefix = `${REDIS_PREFIX}paged:`;
    try {
      const store = redisStore(redis, { prefix });
      await fillRedis(store, PAGED);
      await record("Redis", store);
    } finally {
      await deleteKeys(redis, prefix);
      redis.disconnect();
    }
  }
  printTable(
    `list() page of 100 at the start and at the end of ${PAGED.toLocaleString("en")} records: median µs`,
    ["store", "first page", "last page", "last / first"],
    rows,
  );
}

/** Runs `work` while a setImmediate chain records the longest gap between turns of the event loop. */
async function longestStall(work: () => Promise<unknown>): Promise<{ stallMs: number; totalMs: number }> {
  let longest = 0;
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const start = performance.now();
  await work();
  const totalMs = performance.now() - start;
  running = false;
  longest = Math.max(longest, performance.now() - last);
  return { stallMs: longest, totalMs };
}

/** A store to purge: filled with `count` expired records, and counted afterwards apart from the store. */
interface Purged {
  name: string;
  count: number;
  store: Store;
  fill(): Promise<void>;
  left(): Promise<number>;
  close(): Promise<void>;
}

interface PurgeCounts {
  sqlite: number;
  postgres: number;
  redis: number;
}

async function purgedStores(dir: string, counts: PurgeCounts): Promise<Purged[]> {
  const out: Purged[] = [];
  const db = new BetterSqlite3(join(dir, "purge.db"));
  db.pragma("journal_mode = WAL");
  out.push({
    name: "SQLite file",
    count: counts.sqlite,
    store: sqliteStore(db, { table: "purged" }),
    fill: async () => fillSqlite(db, "purged", counts.sqlite, 1),
    left: async () => (db.prepare("SELECT count(*) AS n FROM purged").get() as { n: number }).n,
    close: async () => void db.close(),
  });
  const pool = await connectPostgres();
  if (pool) {
    const table = `idemkey_bench_purged_${RUN_ID}`;
    out.push({
      name: "PostgreSQL",
      count: counts.postgres,
      store: postgresStore(pool, { table }),
      fill: async () => {
        await pool.query(
          `INSERT INTO ${table} (key, state, fingerprint, token, lease_until, attempts, result, data, created_at,
             updated_at, expires_at)
           SELECT 'k:' || lpad(i::text, 7, '0'), 'completed', 'f', NULL, NULL, 1, '1', NULL, 0, 0, 1
           FROM generate_series(0, $1::integer - 1) AS i`,
          [counts.postgres],
        );
      },
      left: async () => Number((await pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n),
      close: async () => {
        await pool.query(`DROP TABLE IF EXISTS ${table}`);
        await pool.query("DELETE FROM idemkey_meta WHERE name = $1", [table]);
        await pool.end();
      },
    });
  }
  const redis = await connectRedis();
  if (redis) {
    const prefix = `${REDIS_PREFIX}purged:`;
    // Records claimed on a clock an hour and more in the past: expired by Redis's clock, still there physically.
    const past = redisStore(redis, { prefix, clock: () => Date.now() - 7_200_000 });
    out.push({
      name: "Redis",
      count: counts.redis,
      store: redisStore(redis, { prefix }),
      fill: () => fillRedis(past, counts.redis),
      left: async () => redis.zcard(`${prefix}expiries`),
      close: async () => {
        await deleteKeys(redis, prefix);
        redis.disconnect();
      },
    });
  }
  return out;
}

async function benchPurgeStall(counts: PurgeCounts, title: string): Promise<void> {
  const rows: string[][] = [];
  const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-purge-"));
  try {
    for (const purged of await purgedStores(dir, counts)) {
      const { store } = purged;
      await store.get("create");
      const harness = createHarness({ store });
      const engine = idempotencyEngine({ store, scope: "single-tenant" });
      const cases: [string, () => Promise<unknown>][] = [
        [
          "harness: while ((await harness.purge()) > 0)",
          async () => {
            while ((await harness.purge()) > 0) {}
          },
        ],
        ["middleware: purge()", () => engine.purge()],
        [`store: one purge({ limit: ${purged.count / 1000}k })`, () => store.purge({ limit: purged.count })],
      ];
      try {
        for (const [name, purge] of cases) {
          await purged.fill();
          const { stallMs, totalMs } = await longestStall(purge);
          const left = await purged.left();
          if (left !== 0) throw new Error(`bench purge: ${left} ${purged.name} records left after "${name}"`);
          rows.push([
            purged.name,
            `${purged.count / 1000}k`,
            name,
            stallMs.toFixed(1),
            (totalMs / 1000).toFixed(2),
            Math.round(purged.count / (totalMs / 1000)).toLocaleString("en"),
          ]);
        }
      } finally {
        await purged.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(title, ["store", "records", "purge", "longest stall ms", "total s", "records/s"], rows);
}

export async function benchScale(): Promise<void> {
  await benchPaging();
  await benchPurgeStall(
    { sqlite: PURGED, postgres: PURGED, redis: PURGED_REDIS },
    "purge of expired records: longest event-loop stall (target ≤ 100 ms)",
  );
}

/** `npm run bench -- retention`: the purge alone, at the size a few days' retention holds. */
export async function benchRetention(): Promise<void> {
  await benchPurgeStall(
    RETAINED,
    "purge of a few days' retained records: longest event-loop stall (target ≤ 100 ms) and throughput",
  );
}
