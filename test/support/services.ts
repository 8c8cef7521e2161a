import { Redis } from "ioredis";
import pg from "pg";

/**
 * Where the PostgreSQL and Redis servers the tests use are, and whether they answer. A test file awaits one of these
 * at its top level: unreachable under `CI=true` throws, so the file (and the run) fails; unreachable elsewhere prints
 * one loud line saying what is skipped and how to enable it, and `skip` holds the reason for `testStore`'s option.
 */
export interface Service {
  url: string;
  /** Why the suites that need this server are skipped; `undefined` when it answers. */
  skip: string | undefined;
}

export const PG_URL = process.env.IDEMKEY_PG_URL || "postgres://postgres@127.0.0.1:5432/test";
export const REDIS_URL = process.env.IDEMKEY_REDIS_URL || "redis://127.0.0.1:6379";

export function postgresService(): Promise<Service> {
  return probe("PostgreSQL", "IDEMKEY_PG_URL", PG_URL, async () => {
    const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
    try {
      await client.connect();
      await client.query("SELECT 1");
    } finally {
      await client.end().catch(() => {});
    }
  });
}

export function redisService(): Promise<Service> {
  return probe("Redis", "IDEMKEY_REDIS_URL", REDIS_URL, async () => {
    const client = new Redis(REDIS_URL, {
      lazyConnect: true,
      connectTimeout: 3_000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    try {
      await client.connect();
      await client.ping();
    } finally {
      client.disconnect();
    }
  });
}

/**
 * Deletes every key under `prefix`: each test file writes under prefixes of its own on the shared server, and removes
 * them when it is done, so that runs leave nothing behind for the next.
 */
export async function deleteKeysUnder(client: Redis, prefix: string): Promise<void> {
  const found = await client.keys(`${prefix.replace(/[{}]/g, "\\$&")}*`);
  if (found.length > 0) await client.del(...found);
}

async function probe(
  name: string,
  variable: string,
  url: string,
  check: () => Promise<void>,
): Promise<Service> {
  try {
    await check();
    return { url, skip: undefined };
  } catch (error) {
    const reason = `no ${name} answers at ${redact(url)} (${(error as Error).message || String(error)})`;
    if (process.env.CI === "true") {
      throw new Error(`${reason}; CI=true requires ${name}: start it or set ${variable}`, { cause: error });
    }
    console.warn(
      `SKIPPED ${name} tests: ${reason}. Start ${name} there or set ${variable}=<url> to run them ` +
        `(under CI=true this fails the run).`,
    );
    return { url, skip: reason };
  }
}

const redact = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
