import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll } from "vitest";
import { postgresStore } from "../../src/postgres/index.js";
import { redisStore } from "../../src/redis/index.js";
import { postgresService, redisService } from "../support/services.js";
import { frameworks } from "./apps.js";
import { ownerSuite } from "./scenarios.js";

// The owner-side scenarios on the server stores. Each test gets its own table or key prefix, so that purge counts
// only its own records; all of them are removed when the file is done.
const [postgres, redis] = await Promise.all([postgresService(), redisService()]);
const run = randomBytes(4).toString("hex");
const pool = new pg.Pool({ connectionString: postgres.url, max: 4 });
const io = new Redis(redis.url, { lazyConnect: true });
if (!redis.skip) await io.connect();
const tables: string[] = [];
let stores = 0;

afterAll(async () => {
  if (!postgres.skip && tables.length > 0) {
    await pool.query(`DROP TABLE IF EXISTS ${tables.map((t) => `"${t}"`).join(", ")}`);
    await pool.query("DELETE FROM idemkey_meta WHERE name = ANY($1)", [tables]).catch(() => {});
  }
  await pool.end();
  if (!redis.skip) {
    const found = await io.keys(`{idemkey-owner-${run}-*`);
    if (found.length > 0) await io.del(...found);
  }
  io.disconnect();
});

for (const framework of frameworks) {
  ownerSuite(
    framework,
    "postgres",
    (clock) => {
      const table = `idemkey_owner_${run}_${++stores}`;
      tables.push(table);
      return postgresStore(pool, { clock, table });
    },
    { skip: postgres.skip },
  );
  ownerSuite(
    framework,
    "redis",
    (clock) => redisStore(io, { clock, prefix: `{idemkey-owner-${run}-${++stores}}:` }),
    {
      skip: redis.skip,
    },
  );
}
