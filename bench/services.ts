import { Redis } from "ioredis";
import mysql from "mysql2/promise";
import pg from "pg";

/** Where the benchmarks find PostgreSQL and Redis: the same variables and defaults as the tests. */
export const PG_URL = process.env.IDEMKEY_PG_URL || "postgres://postgres@127.0.0.1:5432/test";
export const REDIS_URL = process.env.IDEMKEY_REDIS_URL || "redis://127.0.0.1:6379";

/**
 * Where the benchmarks find MySQL or MariaDB: no default, since the tests never touch a shared server of it (they
 * start their own); set it to a database the bench may create tables in.
 */
export const MYSQL_URL = process.env.IDEMKEY_MYSQL_URL;

/** A connected mysql2 pool, or `undefined` after one line saying why the MySQL rows are left out. */
export async function connectMysql(): Promise<mysql.Pool | undefined> {
  if (MYSQL_URL === undefined || MYSQL_URL === "") {
    console.log(
      "bench: MySQL rows skipped: set IDEMKEY_MYSQL_URL (mysql://user@host:port/database) to run them",
    );
    return undefined;
  }
  const pool = mysql.createPool({ uri: MYSQL_URL, connectTimeout: 3_000, connectionLimit: 10 });
  try {
    await pool.query("SELECT 1");
    return pool;
  } catch (error) {
    await pool.end().catch(() => {});
    unreachable("MySQL", "IDEMKEY_MYSQL_URL", MYSQL_URL, error);
    return undefined;
  }
}

/** A connected pool, or `undefined` after one line saying why the PostgreSQL rows are left out. */
export async function connectPostgres(): Promise<pg.Pool | undefined> {
  const pool = new pg.Pool({ connectionString: PG_URL, connectionTimeoutMillis: 3_000, max: 10 });
  try {
    await pool.query("SELECT 1");
    return pool;
  } catch (error) {
    await pool.end().catch(() => {});
    unreachable("PostgreSQL", "IDEMKEY_PG_URL", PG_URL, error);
    return undefined;
  }
}

/** A connected ioredis client, or `undefined` after one line saying why the Redis rows are left out. */
export async function connectRedis(): Promise<Redis | undefined> {
  const client = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // Without a listener ioredis prints every connection error as unhandled; the first one says why, below.
  let failure: unknown;
  client.on("error", (error: unknown) => {
    failure ??= error;
  });
  try {
    await client.connect();
    await client.ping();
    return client;
  } catch (error) {
    client.disconnect();
    unreachable("Redis", "IDEMKEY_REDIS_URL", REDIS_URL, failure ?? error);
    return undefined;
  }
}

/** Deletes every key under `prefix` (taken literally), a page at a time, so a run leaves nothing behind. */
export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  const pattern = `${prefix.replace(/[*?[\]{}\\]/g, "\\$&")}*`;
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    if (keys.length > 0) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== "0");
}

function unreachable(name: string, variable: string, url: string, error: unknown): void {
  const safe = url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
  console.log(
    `bench: ${name} rows skipped: nothing answers at ${safe} (${(error as Error)?.message || String(error)}); ` +
      `start ${name} or set ${variable}`,
  );
}

/** One command's totals from a Redis server's INFO commandstats. */
export interface CommandStat {
  calls: number;
  usec: number;
}

/** INFO commandstats of the server `redis` talks to, by command name (`evalsha`, `set`, ...). */
export async function commandStats(redis: Pick<Redis, "info">): Promise<Map<string, CommandStat>> {
  const out = new Map<string, CommandStat>();
  for (const match of (await redis.info("commandstats")).matchAll(
    /cmdstat_([^:]+):calls=(\d+),usec=(\d+)/g,
  )) {
    out.set(match[1]!, { calls: Number(match[2]), usec: Number(match[3]) });
  }
  return out;
}

/** What `after` counted beyond `before`, per command, leaving out commands with no new calls. */
export function statsDelta(
  before: Map<string, CommandStat>,
  after: Map<string, CommandStat>,
): Map<string, CommandStat> {
  const out = new Map<string, CommandStat>();
  for (const [name, stat] of after) {
    const was = before.get(name) ?? { calls: 0, usec: 0 };
    if (stat.calls > was.calls) out.set(name, { calls: stat.calls - was.calls, usec: stat.usec - was.usec });
  }
  return out;
}

/** The server's own CPU so far (INFO cpu's used_cpu_sys + used_cpu_user), in µs: a bench reads it before and after. */
export async function redisCpuUs(redis: Pick<Redis, "info">): Promise<number> {
  const info = await redis.info("cpu");
  const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, "m").exec(info)?.[1] ?? Number.NaN);
  return Math.round((field("used_cpu_sys") + field("used_cpu_user")) * 1e6);
}
