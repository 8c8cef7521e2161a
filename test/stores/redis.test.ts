import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, describe, expect, it } from "vitest";
import { StoreLayoutError } from "../../src/errors/index.js";
import { redisStore } from "../../src/redis/index.js";
import { privateRedis } from "../support/redis-server.js";
import { deleteKeysUnder, redisService } from "../support/services.js";
import { testClock, testStore, testStoreAcrossProcesses } from "./contract.js";

const service = await redisService();
const run = randomBytes(4).toString("hex");
const io = new Redis(service.url, { lazyConnect: true });
const node = createClient({ url: service.url });
if (!service.skip) await Promise.all([io.connect(), node.connect()]);

/** Every key this file wrote starts with one of these; the file removes them when it is done. */
const prefixes: Record<string, string> = {
  io: `{idemkey-test-${run}-io}:`,
  node: `{idemkey-test-${run}-node}:`,
  misc: `{idemkey-test-${run}}:`,
  processes: `{idemkey-test-${run}-processes}:`,
};

afterAll(async () => {
  if (!service.skip) {
    for (const prefix of Object.values(prefixes)) await deleteKeysUnder(io, prefix);
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

// Each test's prefix starts with prefixes.processes, so the file's cleanup removes them all.
testStoreAcrossProcesses(
  "redis (ioredis)",
  (name) => ({ kind: "redis", url: service.url, prefix: `${prefixes.processes}${name}:` }),
  { skip: service.skip },
);

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

  it("sends no PEXPIRE for a completion that brings the expiry before the claim's: the longer physical TTL stays", async () => {
    // A private server, so that its command counters hold this test's commands alone (issue 44).
    const server = await privateRedis();
    const client = new Redis(server.url);
    try {
      const store = redisStore(client, { prefix: prefixes.misc, ttlMarginMs: 5_000 });
      const { record } = await store.claim("completed-early", claimInput);
      await client.config("RESETSTAT");
      const saved = await store.update(
        "completed-early",
        { token: record.token!, state: "pending" },
        { state: "completed", token: null, leaseMs: null, result: "r", ttlMs: 30_000 },
      );
      expect(saved?.expiresAt).toBeLessThan(record.expiresAt);
      expect(await client.info("commandstats")).not.toMatch(/cmdstat_pexpire:/);
      // Still at least the new expiry plus the margin: Redis never drops a record its store holds live.
      expect(await client.pttl(`${prefixes.misc}r:completed-early`)).toBeGreaterThan(35_000);
    } finally {
      client.disconnect();
      await server.stop();
    }
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

  it("reads changes across more index entries than one ZRANGEBYLEX takes, and counts no entry whose record is gone", async () => {
    const clock = testClock();
    const store = redisStore(io, { clock, prefix: prefixes.misc });
    const keyOf = (i: number) => `changes-page:${String(i).padStart(4, "0")}`;
    await Promise.all(Array.from({ length: 1_200 }, (_, i) => store.claim(keyOf(i), claimInput)));
    clock.advance(10);
    const since = clock();
    const changed = [3, 499, 500, 501, 999, 1_000, 1_199];
    for (const i of changed) await store.update(keyOf(i), {}, { attempts: 1 });
    // A record Redis expired itself (its physical TTL) leaves its key index entry behind.
    await io.del(`${prefixes.misc}r:${keyOf(42)}`);
    const found = await store.changes!({ prefix: "changes-page:", since, limit: 1_000 });
    expect(found.records.map((r) => r.key)).toEqual(changed.map(keyOf));
    expect(found.live).toBe(1_199);
    expect(found.now).toBe(clock());
    const limited = await store.changes!({ prefix: "changes-page:", since: 0, limit: 700 });
    expect(limited.records.map((r) => r.key)).toEqual(
      Array.from({ length: 701 }, (_, i) => keyOf(i)).filter((k) => k !== keyOf(42)),
    );
  });

  it("keeps a record as a hash whose null fields are absent, and marks the prefix with layout 2", async () => {
    const store = redisStore(io, { prefix: prefixes.misc });
    await store.claim("hash", { ...claimInput, state: "awaiting_approval" });
    expect(await io.hgetall(`${prefixes.misc}r:hash`)).toEqual({
      state: "awaiting_approval",
      fingerprint: "fp",
      token: "t1",
      attempts: "0",
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      expiresAt: expect.any(String),
    });
    expect(await io.get(`${prefixes.misc}layout`)).toBe("2");
  });

  it("writes layout 2 records field for field and reads them as the previous scripts wrote them", async () => {
    // The scripts' arguments and replies may change between versions; the hash may not, so that processes of two
    // versions share a prefix. One clock for the whole test: every time below is exact.
    const store = redisStore(io, { prefix: prefixes.misc, clock: () => 1_000_000 });
    const input = { fingerprint: "fp", token: "t1", leaseMs: 1_000, ttlMs: 60_000, data: '{"d":1}' };
    const pending = {
      state: "pending",
      fingerprint: "fp",
      token: "t1",
      attempts: "0",
      createdAt: "1000000",
      updatedAt: "1000000",
      expiresAt: "1060000",
      leaseUntil: "1001000",
      data: '{"d":1}',
    };
    await store.claim("golden-new", input);
    expect(await io.hgetall(`${prefixes.misc}r:golden-new`)).toEqual(pending);

    // A pending record and its index entries as the scripts before this version wrote them, by hand.
    await io.hset(`${prefixes.misc}r:golden-old`, pending);
    await io.zadd(`${prefixes.misc}expiries`, 1_060_000, "golden-old");
    await io.zadd(`${prefixes.misc}keys`, 0, "golden-old");
    const record = {
      key: "golden-old",
      state: "pending",
      fingerprint: "fp",
      token: "t1",
      leaseUntil: 1_001_000,
      attempts: 0,
      result: null,
      data: '{"d":1}',
      createdAt: 1_000_000,
      updatedAt: 1_000_000,
      expiresAt: 1_060_000,
    };
    expect(await store.get("golden-old")).toEqual(record);
    // The resend rule reads createdAt and updatedAt: untouched since creation, the resent claim is the first one.
    expect(await store.claim("golden-old", input)).toEqual({ status: "claimed", record });
    // A renewal asks back every field its patch leaves: attempts, result, data, fingerprint, createdAt.
    expect(
      await store.update("golden-old", { token: "t1", state: "pending" }, { leaseMs: 2_000, ttlMs: 70_000 }),
    ).toEqual({ ...record, leaseUntil: 1_002_000, expiresAt: 1_070_000 });
    const completed = await store.update(
      "golden-old",
      { token: "t1", state: "pending" },
      { state: "completed", result: '{"ok":1}', token: null, leaseMs: null, attempts: 1, ttlMs: 30_000 },
    );
    expect(completed).toEqual({
      ...record,
      state: "completed",
      token: null,
      leaseUntil: null,
      attempts: 1,
      result: '{"ok":1}',
      expiresAt: 1_030_000,
    });
    expect(await io.hgetall(`${prefixes.misc}r:golden-old`)).toEqual({
      state: "completed",
      fingerprint: "fp",
      attempts: "1",
      result: '{"ok":1}',
      data: '{"d":1}',
      createdAt: "1000000",
      updatedAt: "1000000",
      expiresAt: "1030000",
    });
    // The expiry moved earlier, so its index score came down with it.
    expect(await io.zscore(`${prefixes.misc}expiries`, "golden-old")).toBe("1030000");
    expect(await store.get("golden-old")).toEqual(completed);
  });

  it("refuses a prefix written by layout 1 (JSON strings, no marker) or marked with a newer layout", async () => {
    const old = `{idemkey-test-${run}-old}:`;
    const newer = `{idemkey-test-${run}-newer}:`;
    await io.zadd(`${old}keys`, 0, "k");
    await io.set(`${old}r:k`, JSON.stringify({ state: "completed", expiresAt: "9999999999999" }));
    await io.set(`${newer}layout`, "3");
    try {
      const onOld = redisStore(node, { prefix: old });
      await expect(onOld.get("k")).rejects.toThrow(StoreLayoutError);
      await expect(onOld.claim("other", claimInput)).rejects.toMatchObject({
        name: "StoreLayoutError",
        location: old,
        found: 1,
        supported: 2,
      });
      await expect(redisStore(io, { prefix: newer }).list()).rejects.toMatchObject({
        found: 3,
        supported: 2,
      });
      expect(await io.exists(`${old}layout`, `${newer}r:k`)).toBe(0);
    } finally {
      await io.del(`${old}keys`, `${old}r:k`, `${newer}layout`);
    }
  });

  it("refuses a layout 1 record that appears under a marked prefix rather than misread it", async () => {
    const store = redisStore(io, { prefix: prefixes.misc });
    await store.claim("marked", claimInput);
    await io.set(
      `${prefixes.misc}r:stray`,
      JSON.stringify({ state: "completed", expiresAt: "9999999999999" }),
    );
    for (const call of [
      () => store.claim("stray", claimInput),
      () => store.get("stray"),
      () => store.update("stray", {}, { result: "1" }),
      () => store.delete("stray", {}),
    ]) {
      await expect(call()).rejects.toMatchObject({ name: "StoreLayoutError", found: 1 });
    }
    expect(await io.type(`${prefixes.misc}r:stray`)).toBe("string");
    // Listed in the key index, it is refused by the scripts that walk it too.
    await io.zadd(`${prefixes.misc}keys`, 0, "stray");
    try {
      for (const call of [
        () => store.list({ prefix: "stray" }),
        () => store.changes!({ prefix: "stray", since: 0 }),
      ]) {
        await expect(call()).rejects.toMatchObject({ name: "StoreLayoutError", found: 1 });
      }
    } finally {
      await io.zrem(`${prefixes.misc}keys`, "stray");
    }
  });

  it("purges past index scores left early by a later expiry, and lowers the score when expiry moves earlier", async () => {
    const clock = testClock();
    const prefix = `{idemkey-test-${run}-purge}:`;
    prefixes[prefix] = prefix;
    const store = redisStore(io, { clock, prefix });
    const short = { ...claimInput, ttlMs: 10 };
    for (const k of ["a", "b", "c"]) {
      await store.claim(k, { ...short, token: k });
      // Completing moves expiry later; the index keeps the earlier score, a lower bound.
      await store.update(k, { token: k }, { state: "completed", ttlMs: 60_000 });
    }
    for (const k of ["x", "y"]) await store.claim(k, short);
    const { record } = await store.claim("lowered", { ...claimInput, ttlMs: 60_000 });
    await store.update("lowered", { token: record.token! }, { ttlMs: 5 });
    expect(await io.zscore(`${prefix}expiries`, "lowered")).toBe(`${clock() + 5}`);
    clock.advance(10);
    expect(await store.purge({ limit: 3 })).toBe(3);
    expect(await store.purge({ limit: 3 })).toBe(0);
    expect((await store.list()).map((r) => r.key)).toEqual(["a", "b", "c"]);
    expect(await io.zscore(`${prefix}expiries`, "a")).toBe(`${clock() - 10 + 60_000}`);
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
