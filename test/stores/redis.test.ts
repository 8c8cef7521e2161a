import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, describe, expect, it } from "vitest";
import { redisStore } from "../../src/redis/index.js";
import { redisService } from "../support/services.js";
import { testStore } from "./contract.js";

const service = await redisService();
const run = randomBytes(4).toString("hex");
const io = new Redis(service.url, { lazyConnect: true });
const node = createClient({ url: service.url });
if (!service.skip) await Promise.all([io.connect(), node.connect()]);

/** Every key this file wrote starts with one of these; the file removes them when it is done. */
const prefixes = {
  io: `{idemkey-test-${run}-io}:`,
  node: `{idemkey-test-${run}-node}:`,
  misc: `{idemkey-test-${run}}:`,
};

afterAll(async () => {
  if (!service.skip) {
    for (const prefix of Object.values(prefixes)) {
      const found = await io.keys(`${prefix.replace(/[{}]/g, "\\$&")}*`);
      if (found.length > 0) await io.del(...found);
    }
    await node.close();
  }
  io.disconnect();
});

testStore("redis (ioredis)", (clock) => redisStore(io, { clock, prefix: prefixes.io }), {
  skip: service.skip,
});
testStore("redis (node-redis)", (clock) => redisStore(node, { clock, prefix: prefixes.node }), {
  skip: service.skip,
});

(service.skip ? describe.skip : describe)("redisStore", () => {
  const claimInput = { fingerprint: "fp", token: "t1", leaseMs: 1_000, ttlMs: 60_000 };

  it("keeps records under its prefix with a physical TTL of the logical one plus the margin", async () => {
    const store = redisStore(io, { prefix: prefixes.misc, ttlMarginMs: 5_000 });
    await store.claim("ttl", claimInput);
    const ttl = await io.pttl(`${prefixes.misc}r:ttl`);
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(65_000);
    expect(await io.zscore(`${prefixes.misc}keys`, "ttl")).toBe("0");
    expect(await io.exists(`${prefixes.misc}expiries`)).toBe(1);
  });

  it("moves the physical TTL with the record's expiry on update", async () => {
    const store = redisStore(io, { prefix: prefixes.misc, ttlMarginMs: 0 });
    const { record } = await store.claim("ttl-update", claimInput);
    await store.update("ttl-update", { token: record.token! }, { state: "completed", ttlMs: 3_600_000 });
    expect(await io.pttl(`${prefixes.misc}r:ttl-update`)).toBeGreaterThan(3_000_000);
  });

  it("lets a resent claim (same token, after a dropped reply) find it already holds the key", async () => {
    const store = redisStore(node, { prefix: prefixes.misc });
    expect((await store.claim("resent", claimInput)).status).toBe("claimed");
    expect((await store.claim("resent", claimInput)).status).toBe("claimed");
    expect((await store.claim("resent", { ...claimInput, token: "t2" })).status).toBe("exists");
  });

  it("loads its scripts again after SCRIPT FLUSH", async () => {
    const store = redisStore(io, { prefix: prefixes.misc });
    await store.claim("flushed", claimInput);
    await io.script("FLUSH");
    expect((await store.claim("flushed", { ...claimInput, token: "t2" })).status).toBe("exists");
  });

  it("lists across more index entries than one script looks at, in key order", async () => {
    const store = redisStore(node, { prefix: prefixes.misc });
    const keyOf = (i: number) => `page:${String(i).padStart(4, "0")}`;
    const parked = new Set([7, 640, 1180]);
    await Promise.all(
      Array.from({ length: 1_200 }, (_, i) =>
        store.claim(keyOf(i), { ...claimInput, state: parked.has(i) ? "awaiting_approval" : "pending" }),
      ),
    );
    const approvals = await store.list({ prefix: "page:", state: "awaiting_approval" });
    expect(approvals.map((r) => r.key)).toEqual([...parked].map(keyOf));
    const page = await store.list({ prefix: "page:", after: keyOf(450), limit: 700 });
    expect(page.map((r) => r.key)).toEqual(Array.from({ length: 700 }, (_, i) => keyOf(451 + i)));
  });

  it("rejects bad arguments with a TypeError naming the option", () => {
    expect(() => redisStore(io, { prefix: "" })).toThrow(/options\.prefix/);
    expect(() => redisStore(io, { ttlMarginMs: -1 })).toThrow(/options\.ttlMarginMs/);
    // @ts-expect-error: a clock must be a function
    expect(() => redisStore(io, { clock: 0 })).toThrow(/options\.clock/);
    // @ts-expect-error: not a Redis client
    expect(() => redisStore({ get() {} })).toThrow(/ioredis client or a connected node-redis/);
  });
});
