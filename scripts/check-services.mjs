// Used by .ci/run: PostgreSQL and Redis must answer before the tests, which fail under CI=true when they don't.

import Redis from "ioredis";
import pg from "pg";

const pgUrl = process.env.IDEMKEY_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const redisUrl = process.env.IDEMKEY_REDIS_URL ?? "redis://127.0.0.1:6379";
let failed = false;

const client = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 5000 });
try {
  await client.connect();
  const { rows } = await client.query("select version() as v");
  console.log(`PostgreSQL answers at ${pgUrl}: ${rows[0].v.split(" on ")[0]}`);
} catch (error) {
  console.error(`PostgreSQL does not answer at ${pgUrl}: ${error.message}`);
  failed = true;
} finally {
  await client.end().catch(() => {});
}

const redis = new Redis(redisUrl, { lazyConnect: true, connectTimeout: 5000, maxRetriesPerRequest: 1 });
redis.on("error", () => {});
try {
  await redis.connect();
  const info = await redis.info("server");
  console.log(`Redis answers at ${redisUrl}: ${info.match(/redis_version:(\S+)/)?.[0]}`);
} catch (error) {
  console.error(`Redis does not answer at ${redisUrl}: ${error.message}`);
  failed = true;
} finally {
  redis.disconnect();
}
process.exit(failed ? 1 : 0);
