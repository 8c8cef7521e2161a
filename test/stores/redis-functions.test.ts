import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors/index.js";
import { redisStore } from "../../src/redis/index.js";
import { library } from "../../src/redis/library.js";
import { privateRedis } from "../support/redis-server.js";
import { deleteKeysUnder, redisService } from "../support/services.js";
import { testStore } from "./contract.js";

// The indexed store runs its scripts as Redis 7 functions of one library (src/redis/library.ts), loaded once per
// store, and by EVALSHA where functions are unavailable (issue 44). Command counts come from the server's own
// INFO commandstats or from a proxy in front of the client; records are read back with a connection of the test's.

const service = await redisService();
const run = randomBytes(4).toString("hex");
const prefix = `{idemkey-test-fn-${run}}:`;
const io = new Redis(service.url, { lazyConnect: true });
if (!service.skip) await io.connect();

afterAll(async () => {
  if (!service.skip) await deleteKeysUnder(io, prefix);
  io.disconnect();
});

const claimInput = { fingerprint: "fp", token: "t1", leaseMs: 1_000, ttlMs: 60_000 };
const completion = { state: "completed", token: null, leaseMs: null, result: "r", ttlMs: 30_000 } as const;

/** An error as the client gives a server's error reply. */
const reply = (message: string) => Object.assign(new Error(message), { name: "ReplyError" });

/** `INFO commandstats` as command -> calls. */
async function commandCalls(client: Redis): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of (await client.info("commandstats")).matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) {
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

/**
 * An ioredis client whose named methods are replaced (each call counted in `sent`); every other method is the
 * client's own.
 */
function shaped(client: Redis, replace: Record<string, (call: () => Promise<unknown>) => Promise<unknown>>) {
  const sent: string[] = [];
  const proxy = new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      const how = typeof property === "string" ? replace[property] : undefined;
      if (how === undefined) return value.bind(target);
      return (...args: unknown[]) => {
        sent.push(property as string);
        return how(() => value.apply(target, args));
      };
    },
  });
  return { client: proxy, sent };
}
const pass = (call: () => Promise<unknown>) => call();

/** A server of Redis before 7.0 (or one without functions), as the client sees it. */
const unknownCommand = (name: string) => () =>
  Promise.reject(reply(`ERR unknown command '${name}', with args beginning with: `));
const noFunctions = (client: Redis) =>
  shaped(client, {
    function: unknownCommand("FUNCTION"),
    fcall: unknownCommand("FCALL"),
    fcall_ro: unknownCommand("FCALL_RO"),
    evalsha: pass,
    eval: pass,
  });

// The EVALSHA path, whole, where FUNCTION is an unknown command.
testStore(
  "redis (ioredis, no functions: EVALSHA)",
  (clock) => redisStore(noFunctions(io).client, { clock, prefix: `${prefix}nofn:` }),
  { skip: service.skip },
);

(service.skip ? describe.skip : describe)("redisStore on Redis 7 functions", () => {
  it("loads one library named for its layout and code, and runs claim, completion and replay by FCALL alone", async () => {
    const server = await privateRedis();
    const client = new Redis(server.url);
    try {
      const store = redisStore(client, { prefix });
      await store.claim("warm", claimInput);
      expect(library.name).toMatch(/^idemkey_2_[0-9a-f]{12}$/);
      const libraries = (await client.function("LIST")) as unknown[][];
      expect(libraries.map((l) => l[1])).toEqual([library.name]);
      await client.config("RESETSTAT");
      const { record } = await store.claim("k", claimInput);
      await store.update("k", { token: record.token!, state: "pending" }, completion);
      expect((await store.claim("k", { ...claimInput, token: "t2" })).status).toBe("exists");
      expect((await store.get("k"))?.result).toBe("r");
      const calls = await commandCalls(client);
      expect(calls.fcall).toBe(3);
      expect(calls.fcall_ro).toBe(1);
      expect(calls.evalsha).toBeUndefined();
      expect(calls.eval).toBeUndefined();
      expect(calls["function|load"]).toBeUndefined();
    } finally {
      client.disconnect();
      await server.stop();
    }
  });

  it("leaves another version's library in place: its name and its functions' names are its own", async () => {
    const server = await privateRedis();
    const client = new Redis(server.url);
    try {
      const other = "idemkey_2_000000000000";
      await client.function(
        "LOAD",
        `#!lua name=${other}\nredis.register_function('${other}_claim', function(keys, args) return 'other' end)`,
      );
      const store = redisStore(client, { prefix });
      expect((await store.claim("k", claimInput)).status).toBe("claimed");
      const libraries = (await client.function("LIST")) as unknown[][];
      expect(libraries.map((l) => l[1]).sort()).toEqual([library.name, other].sort());
      expect(await client.fcall(`${other}_claim`, 0)).toBe("other");
    } finally {
      client.disconnect();
      await server.stop();
    }
  });

  it("loads its library again after FUNCTION FLUSH and calls the function once more, the server having run nothing", async () => {
    const server = await privateRedis();
    const client = new Redis(server.url);
    try {
      const { client: counted, sent } = shaped(client, { fcall: pass, fcall_ro: pass, function: pass });
      const store = redisStore(counted, { prefix });
      await store.claim("before", claimInput);
      await client.function("FLUSH");
      sent.length = 0;
      expect((await store.claim("after", claimInput)).status).toBe("claimed");
      expect(sent).toEqual(["fcall", "function", "fcall"]);
      // One record, created once: its attempts and timestamps are the first write's.
      expect(await client.hget(`${prefix}r:after`, "token")).toBe("t1");
      expect((await store.claim("after", { ...claimInput, token: "t2" })).status).toBe("exists");
    } finally {
      client.disconnect();
      await server.stop();
    }
  });

  it("never calls again after a failure that leaves the outcome unknown: the claim fails, the record stands once", async () => {
    let cut = false;
    const { client, sent } = shaped(io, {
      // The command reaches Redis and runs; its reply is lost, as on a connection cut after the write.
      fcall: async (call) => {
        const answer = await call();
        if (!cut) return answer;
        throw new Error("Connection is closed.");
      },
      fcall_ro: pass,
      function: pass,
      evalsha: pass,
      eval: pass,
    });
    const store = redisStore(client, { prefix: `${prefix}cut:`, refusedRetryMs: 0 });
    await store.claim("warm", claimInput);
    sent.length = 0;
    cut = true;
    await expect(store.claim("k", claimInput)).rejects.toBeInstanceOf(StoreError);
    expect(sent).toEqual(["fcall"]);
    expect(await io.hget(`${prefix}cut:r:k`, "token")).toBe("t1");
  });

  it("decides once, where FUNCTION is an unknown command, to run every script by EVALSHA", async () => {
    const { client, sent } = noFunctions(io);
    const store = redisStore(client, { prefix: `${prefix}decide:` });
    const { record } = await store.claim("k", claimInput);
    await store.update("k", { token: record.token!, state: "pending" }, completion);
    expect((await store.get("k"))?.result).toBe("r");
    expect(sent.filter((s) => s === "function")).toEqual(["function"]);
    expect(sent.filter((s) => s.startsWith("fcall"))).toEqual([]);
    expect(sent.filter((s) => s === "evalsha").length).toBeGreaterThanOrEqual(3);
  });

  it("runs by EVALSHA where an ACL allows FUNCTION LOAD but denies FCALL (NOPERM: the call ran nothing)", async () => {
    const server = await privateRedis();
    const admin = new Redis(server.url);
    await admin.acl("SETUSER", "nocall", "on", ">pw", "~*", "+@all", "-fcall", "-fcall_ro");
    const user = new Redis(`redis://nocall:pw@127.0.0.1:${server.port}`);
    try {
      const store = redisStore(user, { prefix });
      const { record } = await store.claim("k", claimInput);
      expect((await store.claim("k", { ...claimInput, token: "t2" })).status).toBe("exists");
      await store.update("k", { token: record.token!, state: "pending" }, completion);
      expect((await store.get("k"))?.result).toBe("r");
      const calls = await commandCalls(admin);
      expect(calls.evalsha).toBeGreaterThanOrEqual(4);
      expect(calls.fcall ?? 0).toBe(0);
      expect(calls.fcall_ro ?? 0).toBe(0);
    } finally {
      user.disconnect();
      admin.disconnect();
      await server.stop();
    }
  });

  it("runs by EVALSHA where an ACL denies FUNCTION (NOPERM), on node-redis", async () => {
    const server = await privateRedis();
    const admin = new Redis(server.url);
    await admin.acl("SETUSER", "nofn", "on", ">pw", "~*", "+@all", "-function");
    const node = createClient({ url: `redis://nofn:pw@127.0.0.1:${server.port}` });
    await node.connect();
    try {
      const store = redisStore(node, { prefix });
      const { record } = await store.claim("k", claimInput);
      await store.update("k", { token: record.token!, state: "pending" }, completion);
      expect((await store.get("k"))?.result).toBe("r");
      const calls = await commandCalls(admin);
      expect(calls.evalsha).toBeGreaterThanOrEqual(3);
      expect(calls.fcall).toBeUndefined();
      expect((await admin.function("LIST")) as unknown[]).toEqual([]);
    } finally {
      await node.close();
      admin.disconnect();
      await server.stop();
    }
  });
});
