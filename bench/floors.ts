import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { createHarness } from "../src/harness/index.js";
import { idempotencyKey } from "../src/key/index.js";
import { postgresStore } from "../src/postgres/index.js";
import { redisStore } from "../src/redis/index.js";
import { sqliteStore } from "../src/sqlite/index.js";
import { memoryStore } from "../src/store/memory.js";
import type { Store } from "../src/store/types.js";
import { noop } from "./harness.js";
import { inRounds } from "./rounds.js";
import { connectPostgres, connectRedis, deleteKeys } from "./services.js";
import { PG_TABLE, REDIS_PREFIX, RUN_ID } from "./stores.js";
import { printTable } from "./table.js";

/**
 * The minimal claim and completion a developer would write by hand on the same client: derive the key, insert a
 * pending row if the key is new, run the tool, write the result; a replay reads the result. No lease, token,
 * fingerprint or retention: what the harness adds to that is what it costs.
 */
interface Floor {
  fresh(task: string, n: number): Promise<unknown>;
  replay(task: string, n: number): Promise<unknown>;
}

interface Contender {
  store: Store;
  floor: Floor;
  close(): Promise<void>;
}

const TTL_MS = 3_600_000;
const REPLAYS = 1_000;
const key = (task: string, n: number) => idempotencyKey(task, "noop", { n });

function memoryContender(): Contender {
  const records = new Map<string, { state: string; result: string | null }>();
  return {
    store: memoryStore(),
    floor: {
      async fresh(task, n) {
        const k = key(task, n);
        if (records.has(k)) return undefined;
        records.set(k, { state: "pending", result: null });
        const value = await noop.run({ n }, undefined as never);
        records.set(k, { state: "completed", result: JSON.stringify(value) });
        return value;
      },
      async replay(task, n) {
        const record = records.get(key(task, n));
        return record?.result == null ? undefined : JSON.parse(record.result);
      },
    },
    close: async () => {},
  };
}

function sqliteContender(): Contender {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-floor-"));
  const db = new BetterSqlite3(join(dir, "ledger.db"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL"); // what sqliteStore sets on a file it opens
  db.exec("CREATE TABLE floor (key TEXT PRIMARY KEY, state TEXT NOT NULL, result TEXT) WITHOUT ROWID");
  const insert = db.prepare("INSERT INTO floor (key, state) VALUES (?, 'pending') ON CONFLICT DO NOTHING");
  const complete = db.prepare("UPDATE floor SET state = 'completed', result = ? WHERE key = ?");
  const select = db.prepare<[string], { state: string; result: string | null }>(
    "SELECT state, result FROM floor WHERE key = ?",
  );
  return {
    store: sqliteStore(db),
    floor: {
      async fresh(task, n) {
        const k = key(task, n);
        if (insert.run(k).changes === 0) return undefined;
        const value = await noop.run({ n }, undefined as never);
        complete.run(JSON.stringify(value), k);
        return value;
      },
      async replay(task, n) {
        const row = select.get(key(task, n));
        return row?.result == null ? undefined : JSON.parse(row.result);
      },
    },
    close: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresContender(): Promise<Contender | undefined> {
  const pool = await connectPostgres();
  if (pool === undefined) return undefined;
  const table = `idemkey_floor_${RUN_ID}`;
  await pool.query(
    `CREATE TABLE ${table} (key text COLLATE "C" PRIMARY KEY, state text NOT NULL, result text)`,
  );
  // Named (prepared) statements, as the store sends its own.
  const query = (name: string, text: string, values: unknown[]) =>
    pool.query<{ state: string; result: string | null }>({ name: `${table}_${name}`, text, values });
  const store = postgresStore(pool, { table: PG_TABLE });
  await store.get("migrate");
  return {
    store,
    floor: {
      async fresh(task, n) {
        const k = key(task, n);
        const claimed = await query(
          "insert",
          `INSERT INTO ${table} (key, state) VALUES ($1, 'pending') ON CONFLICT DO NOTHING RETURNING key`,
          [k],
        );
        if (claimed.rowCount === 0) return undefined;
        const value = await noop.run({ n }, undefined as never);
        await query("complete", `UPDATE ${table} SET state = 'completed', result = $2 WHERE key = $1`, [
          k,
          JSON.stringify(value),
        ]);
        return value;
      },
      async replay(task, n) {
        const { rows } = await query("select", `SELECT state, result FROM ${table} WHERE key = $1`, [
          key(task, n),
        ]);
        return rows[0]?.result == null ? undefined : JSON.parse(rows[0].result);
      },
    },
    close: async () => {
      await pool.query(`DROP TABLE IF EXISTS ${table}`);
      await pool.query(`DROP TABLE IF EXISTS ${PG_TABLE}`);
      await pool.query("DELETE FROM idemkey_meta WHERE name = $1", [PG_TABLE]);
      await pool.end();
    },
  };
}

/** The store with its indexes (list, purge), or without (`indexes: false`: a new key is one plain SET NX GET). */
async function redisContender(indexes = true): Promise<Contender | undefined> {
  const redis = await connectRedis();
  if (redis === undefined) return undefined;
  await deleteKeys(redis, REDIS_PREFIX);
  const floorKey = (k: string) => `${REDIS_PREFIX}floor:${k}`;
  return {
    store: redisStore(redis, { prefix: REDIS_PREFIX, indexes }),
    floor: {
      async fresh(task, n) {
        const k = floorKey(key(task, n));
        if ((await redis.set(k, "pending", "PX", TTL_MS, "NX")) === null) return undefined;
        const value = await noop.run({ n }, undefined as never);
        await redis.set(k, JSON.stringify(value), "PX", TTL_MS, "XX");
        return value;
      },
      async replay(task, n) {
        const text = await redis.get(floorKey(key(task, n)));
        return text === null || text === "pending" ? undefined : JSON.parse(text);
      },
    },
    close: async () => {
      await deleteKeys(redis, REDIS_PREFIX);
      redis.disconnect();
    },
  };
}

const CONTENDERS: [string, () => Contender | Promise<Contender | undefined>][] = [
  ["memory", memoryContender],
  ["SQLite file", sqliteContender],
  ["PostgreSQL", postgresContender],
  ["Redis", () => redisContender()],
  ["Redis, no indexes", () => redisContender(false)],
];

/** Issue 15's target: the harness within 1.15x of the store's hand-written floor, fresh keys and replays. */
const TARGET = 1.15;

/**
 * `harness.call` on a no-op keyed tool beside the hand-written floor on the same client, per store, fresh keys and
 * replays of completed ones, interleaved in rounds.
 */
export async function benchFloors(): Promise<void> {
  const rows: string[][] = [];
  for (const [name, open] of CONTENDERS) {
    const contender = await open();
    if (contender === undefined) continue;
    const { store, floor } = contender;
    const harness = createHarness({ store });
    for (let i = 0; i < REPLAYS; i++) {
      await harness.call("bench-replay", noop, { n: i });
      await floor.fresh("floor-replay", i);
    }
    let fresh = 0;
    let floorFresh = 0;
    let replay = 0;
    let floorReplay = 0;
    const latency = await inRounds({
      "harness fresh": () => harness.call("bench-fresh", noop, { n: fresh++ }),
      "floor fresh": () => floor.fresh("floor-fresh", floorFresh++),
      "harness replay": () => harness.call("bench-replay", noop, { n: replay++ % REPLAYS }),
      "floor replay": () => floor.replay("floor-replay", floorReplay++ % REPLAYS),
    });
    const p50 = (what: string) => latency.get(what)!.p50;
    for (const kind of ["fresh", "replay"] as const) {
      const ratio = p50(`harness ${kind}`) / p50(`floor ${kind}`);
      rows.push([
        name,
        kind,
        p50(`harness ${kind}`).toFixed(1),
        p50(`floor ${kind}`).toFixed(1),
        ratio.toFixed(2),
        ratio <= TARGET ? "met" : "NOT met",
      ]);
    }
    await store.close();
    await contender.close();
  }
  printTable(
    "harness.call against the hand-written floor on the same client (no-op keyed tool, p50 µs)",
    ["store", "call", "harness", "floor", "ratio", `≤ ${TARGET}x`],
    rows,
  );
}
