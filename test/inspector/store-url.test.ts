import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness, defineTool, type Store } from "../../src/index.js";
import { openStore, parseStoreUrl, StoreUrlError } from "../../src/inspector/index.js";
import { maskUrl } from "../../src/inspector/store-url.js";
import { postgresStore } from "../../src/postgres/index.js";
import { redisStore } from "../../src/redis/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { postgresService, redisService } from "../support/services.js";
import { serve } from "./support.js";

const [postgres, redis] = await Promise.all([postgresService(), redisService()]);
const id = randomBytes(4).toString("hex");
const table = `idemkey_inspect_${id}`;
const prefix = `{idemkey-inspect-${id}}:`;
const dir = mkdtempSync(join(tmpdir(), "idemkey-inspect-url-"));

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (!postgres.skip) {
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    await client.query(`DROP TABLE IF EXISTS "${table}"`);
    await client.query("DELETE FROM idemkey_meta WHERE name = $1", [table]);
    await client.end();
  }
  if (!redis.skip) {
    const client = new Redis(redis.url);
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
  }
});

describe("parseStoreUrl", () => {
  it("reads each kind and its parameters", () => {
    expect(parseStoreUrl("sqlite:./ledger.db")).toEqual({ kind: "sqlite", path: resolve("ledger.db") });
    expect(parseStoreUrl("sqlite:/abs/l.db?table=t1")).toEqual({
      kind: "sqlite",
      path: "/abs/l.db",
      table: "t1",
    });
    expect(parseStoreUrl("sqlite:///abs/l.db")).toEqual({ kind: "sqlite", path: "/abs/l.db" });
    expect(parseStoreUrl("postgresql://u:p@db:5432/app?table=calls&schema=agents&sslmode=require")).toEqual({
      kind: "postgres",
      connectionString: "postgresql://u:p@db:5432/app?sslmode=require",
      table: "calls",
      schema: "agents",
    });
    expect(parseStoreUrl("postgres://db/app")).toEqual({
      kind: "postgres",
      connectionString: "postgres://db/app",
    });
    expect(parseStoreUrl("rediss://:pw@cache:6380/2?prefix=%7Bapp%7D%3A")).toEqual({
      kind: "redis",
      url: "rediss://:pw@cache:6380/2",
      prefix: "{app}:",
    });
  });

  it("throws StoreUrlError with the URL, its password masked", () => {
    for (const url of [
      "",
      "ledger.db",
      "http://x",
      "sqlite:",
      "postgres://u:pw@db/x?table=",
      "redis://h?db=1",
    ]) {
      const error = (() => {
        try {
          parseStoreUrl(url);
        } catch (e) {
          return e;
        }
      })();
      expect(error, url).toBeInstanceOf(StoreUrlError);
      expect((error as StoreUrlError).name).toBe("StoreUrlError");
      expect((error as StoreUrlError).message).not.toContain("pw@");
    }
    expect(maskUrl("postgres://u:secret@db/x")).toBe("postgres://u:***@db/x");
    expect(maskUrl("redis://:secret@h:6379")).toBe("redis://:***@h:6379");
  });
});

/** Fills the store through a harness, then opens the same ledger from its URL and reads it over HTTP. */
async function roundTrip(url: string, store: Store) {
  const tool = defineTool({
    name: "ping",
    effect: "keyed",
    run: (args: { n: number }) => ({ pong: args.n }),
  });
  const harness = createHarness({ store });
  await harness.call("task-url", tool, { n: 1 });
  await harness.call("task-url", tool, { n: 2 });
  const opened = await openStore(url);
  const client = await serve({ store: opened.store, label: opened.label });
  try {
    const counts = (await (await client.get("/api/counts")).json()) as { counts: { completed: number } };
    expect(counts.counts.completed).toBe(2);
    const key = harness.key("task-url", tool, { n: 2 });
    const detail = (await (await client.get(`/api/calls/${key}`)).json()) as { result: unknown };
    expect(detail.result).toEqual({ pong: 2 });
  } finally {
    await client.close();
    await opened.close();
  }
}

describe("openStore", () => {
  it("opens a SQLite file and its table", async () => {
    const path = join(dir, "ledger.db");
    const store = sqliteStore(path, { table: "calls" });
    await roundTrip(`sqlite:${path}?table=calls`, store);
    await store.close();
  });

  it.skipIf(postgres.skip)("opens PostgreSQL with ?table=", async () => {
    const pool = new pg.Pool({ connectionString: postgres.url });
    await roundTrip(`${postgres.url}?table=${table}`, postgresStore(pool, { table }));
    await pool.end();
  });

  it.skipIf(redis.skip)("opens Redis with ?prefix=", async () => {
    const client = new Redis(redis.url);
    await roundTrip(`${redis.url}?prefix=${encodeURIComponent(prefix)}`, redisStore(client, { prefix }));
    client.disconnect();
  });
});
