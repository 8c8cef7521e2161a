import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness, defineTool } from "../../src/harness/index.js";
import { redisStore } from "../../src/redis/index.js";
import { deleteKeysUnder, redisService } from "../support/services.js";
import { testStore } from "./contract.js";

const service = await redisService();
const run = randomBytes(4).toString("hex");
const io = new Redis(service.url, { lazyConnect: true });
const node = createClient({ url: service.url });
if (!service.skip) await Promise.all([io.connect(), node.connect()]);

/** Every key this file wrote starts with one of these; the file removes them when it is done. */
const prefixes = {
  io: `{idemkey-test-${run}-lean-io}:`,
  node: `{idemkey-test-${run}-lean-node}:`,
  misc: `{idemkey-test-${run}-lean}:`,
  indexed: `{idemkey-test-${run}-lean-indexed}:`,
};

afterAll(async () => {
  if (!service.skip) {
    for (const prefix of Object.values(prefixes)) await deleteKeysUnder(io, prefix);
    await node.close();
  }
  io.disconnect();
});

const options = { skip: service.skip, list: false, purge: false } as const;
testStore(
  "redis without indexes (ioredis)",
  (clock) => redisStore(io, { clock, prefix: prefixes.io, indexes: false }),
  options,
);
testStore(
  "redis without indexes (node-redis)",
  (clock) => redisStore(node, { clock, prefix: prefixes.node, indexes: false }),
  options,
);

/** Counts the commands a store sends, by name. */
function counting(client: Redis) {
  const sent: string[] = [];
  const wrapped = {
    set: (...args: unknown[]) => {
      sent.push("SET");
      return (client.set as (...a: unknown[]) => Promise<unknown>).apply(client, args);
    },
    evalsha: (...args: unknown[]) => {
      sent.push("EVALSHA");
      return (client.evalsha as (...a: unknown[]) => Promise<unknown>).apply(client, args);
    },
    eval: (...args: unknown[]) => {
      sent.push("EVAL");
      return (client.eval as (...a: unknown[]) => Promise<unknown>).apply(client, args);
    },
  };
  return { client: wrapped as unknown as Redis, sent };
}

(service.skip ? describe.skip : describe)("redisStore without indexes", () => {
  const claimInput = { fingerprint: "fp", token: "t1", leaseMs: 1_000, ttlMs: 60_000 };

  it("claims a new key with one SET and replays a completed one with one SET, on Redis's clock", async () => {
    const { client, sent } = counting(io);
    const store = redisStore(client, { prefix: prefixes.misc, indexes: false });
    await store.get("warm"); // the layout check, once per store
    sent.length = 0;
    const claimed = await store.claim("one-set", { ...claimInput, data: '{"a":"x\\ny"}' });
    expect(claimed.status).toBe("claimed");
    expect(sent).toEqual(["SET"]);
    const completed = await store.update(
      "one-set",
      { token: "t1", state: "pending" },
      { state: "completed", result: '"done"', leaseMs: null, ttlMs: 120_000 },
    );
    expect(sent).toEqual(["SET", "EVALSHA"]);
    expect(completed).toMatchObject({
      state: "completed",
      result: '"done"',
      leaseUntil: null,
      data: '{"a":"x\\ny"}',
    });
    const replay = await store.claim("one-set", { ...claimInput, token: "t2" });
    expect(sent).toEqual(["SET", "EVALSHA", "SET"]);
    expect(replay).toEqual({ status: "exists", record: completed });
    // Times on Redis's clock: the record's expiry is the key's own.
    const [seconds, micros] = (await io.time()) as [number, number];
    const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    expect(Math.abs(completed!.updatedAt - redisNow)).toBeLessThan(5_000);
    expect(await io.call("PEXPIRETIME", `${prefixes.misc}r:one-set`)).toBe(completed!.expiresAt);
    expect(completed!.expiresAt).toBe(completed!.updatedAt + 120_000);
    expect(await io.get(`${prefixes.misc}layout`)).toBe("3");
  });

  it("places a plain SET's record in time from the key's expiry", async () => {
    const store = redisStore(io, { prefix: prefixes.misc, indexes: false });
    await store.claim("relative", claimInput);
    expect(await io.get(`${prefixes.misc}r:relative`)).toBe(
      'pending\n"t1"\n+1000\n0\n+0\n+0\n+60000\n"fp"\n\n',
    );
    const expiry = Number(await io.call("PEXPIRETIME", `${prefixes.misc}r:relative`));
    expect(await store.get("relative")).toEqual({
      key: "relative",
      state: "pending",
      fingerprint: "fp",
      token: "t1",
      leaseUntil: expiry - 59_000,
      attempts: 0,
      result: null,
      data: null,
      createdAt: expiry - 60_000,
      updatedAt: expiry - 60_000,
      expiresAt: expiry,
    });
    // A renewal writes absolute times and keeps the createdAt the key's expiry implied.
    const renewed = await store.update("relative", { token: "t1" }, { leaseMs: 2_000, ttlMs: 60_000 });
    expect(renewed!.createdAt).toBe(expiry - 60_000);
    expect(await io.get(`${prefixes.misc}r:relative`)).not.toContain("+");
  });

  it("answers a resent claim and takes over a lapsed lease on Redis's clock", async () => {
    const store = redisStore(node, { prefix: prefixes.misc, indexes: false });
    const short = { ...claimInput, leaseMs: 30 };
    expect((await store.claim("lapsed", short)).status).toBe("claimed");
    expect((await store.claim("lapsed", short)).status).toBe("claimed");
    expect((await store.claim("lapsed", { ...short, token: "t2" })).status).toBe("exists");
    await sleep(60);
    const taken = await store.claim("lapsed", { ...short, token: "t2" });
    expect(taken).toMatchObject({ status: "taken_over", record: { token: "t2" }, previous: { token: "t1" } });
    // The old holder's completion is refused: the token CAS.
    expect(
      await store.update("lapsed", { token: "t1" }, { state: "completed", result: "1" }),
    ).toBeUndefined();
    expect(await store.update("lapsed", { token: "t2" }, { state: "completed", result: "2" })).toMatchObject({
      result: "2",
    });
    expect(await store.delete("lapsed", { token: "t1" })).toBe(false);
    expect(await store.delete("lapsed", { state: "completed" })).toBe(true);
    expect(await io.exists(`${prefixes.misc}r:lapsed`)).toBe(0);
  });

  it("expires a record in Redis when its retention ends, and claims the key again", async () => {
    const store = redisStore(io, { prefix: prefixes.misc, indexes: false });
    const { record } = await store.claim("short", { ...claimInput, ttlMs: 40 });
    await store.update("short", { token: record.token! }, { state: "completed", result: "1", ttlMs: 40 });
    expect((await store.claim("short", { ...claimInput, token: "t2" })).status).toBe("exists");
    await sleep(80);
    expect(await store.get("short")).toBeUndefined();
    expect((await store.claim("short", { ...claimInput, token: "t3" })).status).toBe("claimed");
  });

  it("runs the harness, and says that list and purge need the indexes", async () => {
    const store = redisStore(io, { prefix: prefixes.misc, indexes: false });
    const harness = createHarness({ store });
    let runs = 0;
    const tool = defineTool({
      name: "send",
      effect: "keyed",
      run: async (args: { n: number }) => ++runs + args.n,
    });
    expect(await harness.call("task", tool, { n: 10 })).toBe(11);
    expect(await harness.call("task", tool, { n: 10 })).toBe(11);
    expect(runs).toBe(1);
    await expect(store.list()).rejects.toThrow(/options\.indexes/);
    await expect(store.purge()).rejects.toThrow(TypeError);
    expect(store.changes).toBeUndefined();
  });

  it("refuses a prefix of the indexed store, and the indexed store refuses its prefix", async () => {
    await redisStore(io, { prefix: prefixes.indexed }).claim("k", claimInput);
    await expect(
      redisStore(io, { prefix: prefixes.indexed, indexes: false }).claim("k2", claimInput),
    ).rejects.toMatchObject({
      name: "StoreLayoutError",
      found: 2,
      supported: 3,
      option: "indexes: true (the default)",
      // Two settings of one version: neither side is older, so the message says to open it as it was written.
      message: expect.stringMatching(/opened with indexes: true[\s\S]*Open it as the records were written/),
    });
    await redisStore(io, { prefix: prefixes.misc, indexes: false }).get("k");
    const refusal = await redisStore(io, { prefix: prefixes.misc })
      .get("k")
      .catch((error: unknown) => error);
    expect(refusal).toMatchObject({
      name: "StoreLayoutError",
      found: 3,
      supported: 2,
      option: "indexes: false",
    });
    expect((refusal as Error).message).not.toMatch(/newer|upgrade|older|delete/);
    // A hash under a marked prefix (a process that skipped the marker) is refused, not misread.
    await io.hset(`${prefixes.misc}r:hash`, "state", "completed");
    const lean = redisStore(io, { prefix: prefixes.misc, indexes: false });
    await expect(lean.claim("hash", claimInput)).rejects.toMatchObject({
      name: "StoreLayoutError",
      option: "indexes: true (the default)",
    });
    await expect(lean.get("hash")).rejects.toMatchObject({ name: "StoreLayoutError" });
  });

  it("rejects bad arguments with a TypeError naming the option", () => {
    // @ts-expect-error: a boolean
    expect(() => redisStore(io, { indexes: "no" })).toThrow(/options\.indexes/);
    expect(() => redisStore(io, { indexes: false, ttlMarginMs: 5 })).toThrow(/options\.ttlMarginMs/);
    const noSet = { evalsha: io.evalsha.bind(io), eval: io.eval.bind(io) };
    expect(() => redisStore(noSet, { indexes: false })).toThrow(/set\(\)/);
  });
});
