import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { postgresStore } from "../../src/postgres/index.js";
import { redisStore } from "../../src/redis/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import type { Store } from "../../src/store/types.js";
import { PG_URL, postgresService, REDIS_URL, redisService } from "../support/services.js";

// The stores the cross-language tests open in both languages: a spec is what python/tests/worker.py's `open_store`
// (which asgi_owner.py uses too) and fixtures/worker.ts's `openStore` read.

export interface Backend {
  name: string;
  /** Why it is skipped: its server does not answer (outside CI). */
  skip: string | undefined;
  /** A store spec for the workers, fresh for each test (a new file, table or prefix). */
  spec(test: string): string;
  /** The same store, opened in this process. */
  open(spec: string): Promise<Store>;
}

/**
 * One SQLite file (in `dir`), one PostgreSQL table and one Redis prefix, each new for each `spec`. The servers are
 * shared: `cleanup` drops the tables and deletes the prefixes this run made (never a flush).
 */
export async function sharedBackends(
  dir: string,
): Promise<{ backends: Backend[]; cleanup(): Promise<void> }> {
  const runId = `${process.pid}_${Date.now().toString(36)}`;
  const pgService = await postgresService();
  const redisFound = await redisService();
  const tables: string[] = [];
  const prefixes: string[] = [];
  const backends: Backend[] = [
    {
      name: "one SQLite file",
      skip: undefined,
      spec: (test) => `sqlite:${join(dir, `${test}.db`)}`,
      open: async (spec) => sqliteStore(spec.slice("sqlite:".length)),
    },
    {
      name: "one PostgreSQL table",
      skip: pgService.skip,
      spec: (test) => {
        const table = `idemkey_x_${runId}_${test.replace(/[^a-z0-9]/gi, "_")}`.toLowerCase();
        tables.push(table);
        return `postgres:${PG_URL}|${table}`;
      },
      open: async (spec) => {
        const bar = spec.lastIndexOf("|");
        const pool = new pg.Pool({ connectionString: spec.slice("postgres:".length, bar), max: 2 });
        const store = postgresStore(pool, { table: spec.slice(bar + 1) });
        const close = async () => {
          await store.close();
          await pool.end();
        };
        return { ...store, close };
      },
    },
    {
      name: "one Redis prefix",
      skip: redisFound.skip,
      spec: (test) => {
        const prefix = `{idemkey-x-${runId}-${test}}:`;
        prefixes.push(prefix);
        return `redis:${REDIS_URL}|${prefix}`;
      },
      open: async (spec) => {
        const bar = spec.lastIndexOf("|");
        const client = new Redis(spec.slice("redis:".length, bar));
        const store = redisStore(client, { prefix: spec.slice(bar + 1) });
        const close = async () => {
          await store.close();
          await client.quit();
        };
        return { ...store, close };
      },
    },
  ];
  async function cleanup() {
    if (tables.length > 0) {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      for (const table of tables) {
        await client.query(`DROP TABLE IF EXISTS "public"."${table}"`);
        await client.query(`DELETE FROM "public"."idemkey_meta" WHERE name = $1`, [table]);
      }
      await client.end();
    }
    if (prefixes.length > 0) {
      const client = new Redis(REDIS_URL);
      for (const prefix of prefixes) {
        const keys = await client.keys(`${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`);
        if (keys.length > 0) await client.del(...keys);
      }
      await client.quit();
    }
  }
  return { backends, cleanup };
}
