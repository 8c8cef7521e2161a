import { randomBytes, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Cluster, Redis } from "ioredis";
import { createCluster } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreConfigError, StoreError, StoreLayoutError } from "../../src/errors/index.js";
import { type RedisClientLike, redisStore } from "../../src/redis/index.js";
import type { Changes, Store } from "../../src/store/types.js";
import { type RedisCluster, startRedisCluster } from "../support/cluster/redis-cluster.js";
import { testStore } from "./contract.js";

/**
 * The Redis store on a real six-node Redis Cluster of the test's own (three masters, three replicas, on free
 * loopback ports), through both clients' cluster modes: the contract suite, a missing hash tag, and a reshard of the
 * store's slot with calls in flight. Failover is redis-cluster-failover.test.ts.
 */
let cluster: RedisCluster;
const run = randomBytes(4).toString("hex");
const opened: { close(): unknown }[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
}, 120_000);
afterAll(async () => {
  for (const client of opened) await client.close();
  await cluster?.stop();
});

const clients: Record<string, () => Promise<RedisClientLike>> = {
  "ioredis Cluster": async () => {
    const client = new Cluster(cluster.seeds);
    opened.push({ close: () => client.disconnect() });
    return client;
  },
  "node-redis createCluster": async () => {
    const client = createCluster({
      rootNodes: cluster.seeds.map((s) => ({ url: `redis://${s.host}:${s.port}` })),
    });
    client.on("error", () => {});
    await client.connect();
    opened.push({ close: () => client.close() });
    return client as unknown as RedisClientLike;
  },
};

/** How often a node refused a command with `code` (TRYAGAIN, ASK, ...), from its own INFO errorstats. */
async function refusals(code: string): Promise<number> {
  let total = 0;
  for (const node of cluster.live()) {
    const stats = String(await node.admin.info("errorstats"));
    total += Number(new RegExp(`errorstat_${code}:count=(\\d+)`).exec(stats)?.[1] ?? 0);
  }
  return total;
}

for (const [name, connect] of Object.entries(clients)) {
  describe(`Redis Cluster, ${name}`, () => {
    let client: RedisClientLike;
    beforeAll(async () => {
      client = await connect();
    });

    testStore(`redis cluster (${name})`, (clock) =>
      redisStore(client, { clock, prefix: `{idemkey-${run}-${name.split(" ")[0]}}:` }),
    );

    it("refuses a prefix without a hash tag at construction, naming the option", () => {
      expect(() => redisStore(client, { prefix: "idemkey:" })).toThrow(TypeError);
      expect(() => redisStore(client, { prefix: "idemkey:" })).toThrow(/options\.prefix.*hash tag/);
      expect(() => redisStore(client, { prefix: "{}idemkey:" })).toThrow(/options\.prefix/);
      expect(() => redisStore(client, { prefix: "{idemkey" })).toThrow(/options\.prefix/);
      expect(() => redisStore(client, { prefix: "app:{idemkey}:" })).not.toThrow();
    });

    it("a reshard of the store's slot: calls in flight wait it out, list, changes and purge say nothing of layouts", async () => {
      const prefix = `{idemkey-${run}-move-${name.split(" ")[0]}}:`;
      const store = redisStore(client, { prefix });
      const input = () => ({ fingerprint: "fp", token: randomUUID(), leaseMs: 60_000, ttlMs: 600_000 });
      for (let i = 0; i < 20; i++) await store.claim(`before:${i}`, input());
      const slot = await cluster.slotOf(prefix);
      const from = await cluster.masterOf(slot);
      const to = await cluster.otherMaster(from);

      const inFlight: Promise<PromiseSettledResult<unknown>>[] = [];
      const settle = (call: Promise<unknown>) => Promise.allSettled([call]).then(([outcome]) => outcome!);
      const refusedBefore = (await refusals("TRYAGAIN")) + (await refusals("ASK"));
      await cluster.migrate(slot, to, async () => {
        // Half of the slot's keys have moved: every call now meets TRYAGAIN or ASK. Hold the slot there longer
        // than either client retries on its own (ioredis: 16 tries 100 ms apart), as a large reshard does.
        inFlight.push(
          ...[
            ...Array.from({ length: 5 }, (_, i) => store.claim(`during:${i}`, input())),
            store.list({ limit: 100 }),
            store.purge(),
            store.get("before:3"),
            store.changes!({ since: 0, limit: 100 }),
          ].map(settle),
        );
        const held = Date.now();
        while (
          Date.now() - held < 3_000 ||
          (await refusals("TRYAGAIN")) + (await refusals("ASK")) === refusedBefore
        ) {
          await sleep(100);
        }
      });
      const outcomes = await Promise.all(inFlight);
      for (const outcome of outcomes) {
        if (outcome.status === "rejected") {
          expect(outcome.reason).not.toBeInstanceOf(StoreLayoutError);
          throw outcome.reason;
        }
      }
      expect(
        (outcomes.slice(0, 5) as PromiseFulfilledResult<{ status: string }>[]).map((o) => o.value.status),
      ).toEqual(Array(5).fill("claimed"));
      expect((outcomes[5] as PromiseFulfilledResult<unknown[]>).value.length).toBeGreaterThanOrEqual(20);
      expect((outcomes[8] as PromiseFulfilledResult<Changes>).value.live).toBeGreaterThanOrEqual(20);
      expect((await store.list({ limit: 100 })).length).toBe(25);
      expect((await cluster.masterOf(slot)).port).toBe(to.port);
    }, 120_000);
  });
}

describe("Redis Cluster without a hash tag, through a client that cannot tell it is a cluster", () => {
  it("fails on first use with a configuration error that says to add a hash tag, not a retryable StoreError", async () => {
    const node = cluster.live()[0]!;
    const client = new Redis({ host: "127.0.0.1", port: node.port, maxRetriesPerRequest: 0 });
    opened.push({ close: () => client.disconnect() });
    const store: Store = redisStore(client, { prefix: `idemkey-${run}-untagged:` });
    const error = await store
      .claim("k", { fingerprint: "fp", token: "t", leaseMs: 1_000, ttlMs: 60_000 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(StoreConfigError);
    expect(error).not.toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ store: "redis", option: "prefix" });
    expect((error as Error).message).toMatch(/hash tag/);
    expect((error as Error).message).toMatch(/CROSSSLOT/);
  });
});
