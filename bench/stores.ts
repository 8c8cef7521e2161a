import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mysqlStore } from "../src/mysql/index.js";
import { postgresStore } from "../src/postgres/index.js";
import { redisStore } from "../src/redis/index.js";
import { sqliteStore } from "../src/sqlite/index.js";
import { memoryStore } from "../src/store/memory.js";
import type { Store } from "../src/store/types.js";
import { connectMysql, connectPostgres, connectRedis, deleteKeys } from "./services.js";

export const STORE_NAMES = ["memory", "SQLite file", "PostgreSQL", "Redis", "MySQL"] as const;
export type StoreName = (typeof STORE_NAMES)[number];

/** A store's name as a path segment: `sqlite-file`. */
export const storeSlug = (name: StoreName) => name.toLowerCase().replace(/[^a-z]+/g, "-");

/**
 * The table and key prefix the benchmarks write to, new for each run (two runs on one shared server never see each
 * other's records), emptied before and after each use; the table is dropped at the end.
 */
export const RUN_ID = `${process.pid.toString(36)}${Date.now().toString(36)}`;
export const PG_TABLE = `idemkey_bench_${RUN_ID}`;
export const REDIS_PREFIX = `{idemkey-bench-${RUN_ID}}:`;

export interface OpenStore {
  store: Store;
  /** Empties what the benchmark wrote and releases the connections it opened. */
  close: () => Promise<void>;
}

/**
 * Opens one store, empty, with its own connections: a pool of 10 for PostgreSQL, one ioredis connection for Redis
 * (it pipelines concurrent commands). `undefined` when its server does not answer (one line says so).
 */
export async function openStore(name: StoreName): Promise<OpenStore | undefined> {
  switch (name) {
    case "memory":
      return { store: memoryStore(), close: async () => {} };
    case "SQLite file": {
      const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-"));
      const store = sqliteStore(join(dir, "ledger.db"));
      return {
        store,
        close: async () => {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    case "PostgreSQL": {
      const pool = await connectPostgres();
      if (pool === undefined) return undefined;
      const store = postgresStore(pool, { table: PG_TABLE });
      await store.get("migrate"); // creates the table on first use
      const empty = () => pool.query(`TRUNCATE ${PG_TABLE}`);
      await empty();
      return {
        store,
        close: async () => {
          await pool.query(`DROP TABLE IF EXISTS ${PG_TABLE}`);
          await pool.query("DELETE FROM idemkey_meta WHERE name = $1", [PG_TABLE]);
          await pool.end();
        },
      };
    }
    case "MySQL": {
      const pool = await connectMysql();
      if (pool === undefined) return undefined;
      const store = mysqlStore(pool, { table: PG_TABLE });
      await store.get("migrate"); // creates the table on first use
      await pool.query(`TRUNCATE ${PG_TABLE}`);
      return {
        store,
        close: async () => {
          await pool.query(`DROP TABLE IF EXISTS ${PG_TABLE}`);
          await pool.query("DELETE FROM idemkey_meta WHERE name = ?", [PG_TABLE]);
          await pool.end();
        },
      };
    }
    case "Redis": {
      const redis = await connectRedis();
      if (redis === undefined) return undefined;
      await deleteKeys(redis, REDIS_PREFIX);
      return {
        store: redisStore(redis, { prefix: REDIS_PREFIX }),
        close: async () => {
          await deleteKeys(redis, REDIS_PREFIX);
          redis.disconnect();
        },
      };
    }
  }
}

/** The stores that can be opened now; for each that cannot, its one line says why. */
export async function availableStores(): Promise<StoreName[]> {
  const available: StoreName[] = [];
  for (const name of STORE_NAMES) {
    const opened = await openStore(name);
    if (opened === undefined) continue;
    available.push(name);
    await opened.close();
  }
  return available;
}
