import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient as createLibsqlClient } from "@libsql/client";
import { Redis } from "ioredis";
import pg from "pg";
import { createClient } from "redis";
import { afterAll, describe, expect, it } from "vitest";
import { createDynamoTable, dynamoStore } from "../../src/dynamodb/index.js";
import { createHarness, defineTool } from "../../src/index.js";
import { libsqlStore } from "../../src/libsql/index.js";
import { postgresStore } from "../../src/postgres/index.js";
import { redisStore } from "../../src/redis/index.js";
import type { Store } from "../../src/store/types.js";
import { privateDynalite } from "../support/dynalite.js";
import { deleteKeysUnder, postgresService, redisService } from "../support/services.js";

/**
 * What a keyed call costs on a networked store, counted at the client the store was given, not timed (issue 32). The
 * SQL stores order their statements by what recent claims met (src/store/recent-claims.ts): while calls are fresh, a
 * fresh call is at most two round trips (claim, complete); while they are replays, a replay is one, and writes
 * nothing. A call unlike the recent ones pays one more. A change that adds a round trip to any of these fails here,
 * whatever the machine's speed. "Writes" counts the statements that can change rows, each its own autocommit, so it
 * bounds the commits.
 */
const LIMITS = {
  fresh: { roundTrips: 2, writes: 2 },
  replay: { roundTrips: 1, writes: 0 },
  "fresh after replays": { roundTrips: 3, writes: 2 },
  // The insert that finds the row there, then a read (PostgreSQL) or the claim's batch, whose upsert leaves a live
  // row as it is (the async SQLite stores): statements that can write, here writing nothing.
  "replay after fresh calls": { roundTrips: 2, writes: 2 },
};
/** A Redis script or function runs as one atomic step: counted as a write whether it wrote or only read. */
const SCRIPT_LIMITS = {
  fresh: { roundTrips: 2, writes: 2 },
  replay: { roundTrips: 1, writes: 1 },
  "fresh after replays": { roundTrips: 2, writes: 2 },
  "replay after fresh calls": { roundTrips: 1, writes: 1 },
};
type Case = keyof typeof LIMITS;
interface Cost {
  roundTrips: number;
  writes: number;
}

/** Every call through the client's named methods, with whether it can write; everything else passes through. */
interface Sent {
  method: string;
  writes: boolean;
  text: string;
}

function counting<T extends object>(client: T, methods: Record<string, (args: unknown[]) => boolean>) {
  const sent: Sent[] = [];
  const proxy = new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      const writes = typeof property === "string" ? methods[property] : undefined;
      if (writes === undefined || typeof value !== "function") {
        return typeof value === "function" ? value.bind(target) : value;
      }
      return (...args: unknown[]) => {
        sent.push({
          method: property as string,
          writes: writes(args),
          text: statementText(args[0]).slice(0, 200),
        });
        return value.apply(target, args);
      };
    },
  });
  return { client: proxy, sent };
}

/** pg takes a statement as its text or as a config object `{ text, values, name }`. */
const statementText = (statement: unknown): string =>
  typeof statement === "string" ? statement : String((statement as { text?: unknown })?.text ?? "");

/** A statement that can change rows: an INSERT, UPDATE or DELETE, alone or in a CTE. */
const sqlWrites = (text: string) => /\b(INSERT|UPDATE|DELETE)\b/i.test(text.replace(/FOR UPDATE/gi, ""));
const script = () => true;

/** The cost of each case on a store whose every request goes through `sent`. */
async function costs(name: string, store: Store, sent: Sent[]) {
  let runs = 0;
  const tool = defineTool({
    name: "sendReport",
    effect: "keyed",
    run: async (args: { n: number }) => {
      runs++;
      return { n: args.n };
    },
  });
  const harness = createHarness({ store });
  const task = `round-trips-${name}-${randomBytes(4).toString("hex")}`;
  let n = 0;
  const fresh = () => harness.call(task, tool, { n: n++ });
  const replay = (of: number) => harness.call(task, tool, { n: of });
  const cost = async (call: () => Promise<unknown>) => {
    const from = sent.length;
    await call();
    const during = sent.slice(from);
    return { roundTrips: during.length, writes: during.filter((s) => s.writes).length, sent: during };
  };
  const result = {} as Record<Case, Cost & { sent: Sent[] }>;
  // The first calls create the schema or load the scripts, and teach the store that calls are fresh.
  for (let i = 0; i < 10; i++) await fresh();
  result.fresh = await cost(fresh);
  result["replay after fresh calls"] = await cost(() => replay(0));
  for (let i = 1; i < 10; i++) await replay(i);
  result.replay = await cost(() => replay(3));
  result["fresh after replays"] = await cost(fresh);
  expect(runs, "the tool ran once per fresh key, never on a replay").toBe(n);
  return result;
}

function expectWithin(result: Record<Case, Cost & { sent: Sent[] }>, limits: Record<Case, Cost>) {
  for (const [name, limit] of Object.entries(limits) as [Case, Cost][]) {
    const got = result[name];
    const detail = `${name}: ${JSON.stringify(got.sent)}`;
    expect(got.roundTrips, detail).toBeLessThanOrEqual(limit.roundTrips);
    expect(got.writes, detail).toBeLessThanOrEqual(limit.writes);
    // Not zero either: a count of nothing would mean the wrapper saw no traffic and the test proves nothing.
    expect(got.roundTrips, detail).toBeGreaterThan(0);
  }
}

const pgService = await postgresService();
const redis = await redisService();
const run = randomBytes(4).toString("hex");

describe.skipIf(pgService.skip)("round trips on PostgreSQL (pg.Pool)", () => {
  const pool = new pg.Pool({ connectionString: pgService.url, max: 2 });
  const table = `idemkey_round_trips_${run}`;
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    await pool.query(`DELETE FROM idemkey_meta WHERE name LIKE $1`, [`${table}%`]).catch(() => {});
    await pool.end();
  });

  it("each case within its limit", async () => {
    const { client, sent } = counting(pool, { query: (args) => sqlWrites(statementText(args[0])) });
    expectWithin(await costs("pg", postgresStore(client, { table }), sent), LIMITS);
  });
});

describe.skipIf(redis.skip)("round trips on Redis", () => {
  const io = new Redis(redis.url, { lazyConnect: true });
  const node = createClient({ url: redis.url });
  const prefix = `{idemkey-round-trips-${run}}:`;
  afterAll(async () => {
    if (io.status !== "wait") await deleteKeysUnder(io, prefix);
    if (node.isOpen) await node.close();
    io.disconnect();
  });

  it("ioredis: each case within its limit", async () => {
    await io.connect();
    const { client, sent } = counting(io, {
      evalsha: script,
      eval: script,
      set: script,
      fcall: script,
      fcall_ro: script,
      function: script,
    });
    expectWithin(await costs("ioredis", redisStore(client, { prefix: `${prefix}io:` }), sent), SCRIPT_LIMITS);
  });

  it("node-redis: each case within its limit", async () => {
    await node.connect();
    const { client, sent } = counting(node, {
      evalSha: script,
      eval: script,
      set: script,
      fCall: script,
      fCallRo: script,
      functionLoad: script,
    });
    expectWithin(
      await costs("node-redis", redisStore(client, { prefix: `${prefix}node:` }), sent),
      SCRIPT_LIMITS,
    );
  });
});

describe("round trips on libsqlStore (D1 sends the same statements)", () => {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-round-trips-"));
  const libsql = createLibsqlClient({ url: `file:${join(dir, "ledger.db")}` });
  afterAll(() => {
    libsql.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("each case within its limit", async () => {
    // libSQL's execute takes a statement as `{ sql, args }`; batch takes a list of them.
    const { client, sent } = counting(libsql, {
      execute: (args) => sqlWrites(String((args[0] as { sql: string }).sql)),
      batch: (args) => (args[0] as { sql: string }[]).some((s) => sqlWrites(s.sql)),
    });
    expectWithin(await costs("libsql", libsqlStore(client), sent), LIMITS);
  });
});

describe("round trips on DynamoDB (dynalite)", () => {
  it("each case within its limit: a fresh call two writes, a replay one read", async () => {
    const dynalite = await privateDynalite();
    try {
      const client = dynalite.client();
      await createDynamoTable(client, { table: "idemkey-round-trips" });
      // Every command is one request; PutItem, UpdateItem and DeleteItem are the ones that can write.
      const { client: counted, sent } = counting(client, {
        send: (args) => /^(Put|Update|Delete)Item/.test((args[0] as object).constructor.name),
      });
      const store = dynamoStore(counted, { table: "idemkey-round-trips" });
      const result = await costs("dynamodb", store, sent);
      expectWithin(result, LIMITS);
      // The two cases the issue names, exactly: a fresh call is the claim's put and the completion, a replay one
      // strongly consistent read that writes nothing.
      expect(result.fresh.sent.map((s) => s.method)).toEqual(["send", "send"]);
      expect(result.fresh.writes).toBe(2);
      expect(result.replay).toMatchObject({ roundTrips: 1, writes: 0 });
    } finally {
      await dynalite.stop();
    }
  });
});
