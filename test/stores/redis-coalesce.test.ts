import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors/index.js";
import { type Command, coalesced } from "../../src/redis/coalesce.js";
import { redisStore } from "../../src/redis/index.js";
import { type FaultProxy, faultProxy } from "../support/fault-proxy.js";
import { type PrivateRedis, privateRedis, redisServerAvailable } from "../support/redis-server.js";

const claimInput = { fingerprint: "fp", token: "t", leaseMs: 10_000, ttlMs: 60_000 };

/** A client that records what it was sent and answers each command by `answer`, or fails the whole exec. */
function fakeClient(answer: (command: Command) => [Error | null, unknown], execFails?: Error) {
  const pipelines: Command[][] = [];
  const direct: Command[] = [];
  return {
    pipelines,
    direct,
    client: {
      pipeline: (commands: Command[]) => {
        pipelines.push(commands);
        return {
          exec: async () => {
            if (execFails) throw execFails;
            return commands.map(answer);
          },
        };
      },
    },
    send: async (command: Command) => {
      direct.push(command);
      const [error, reply] = answer(command);
      if (error) throw error;
      return reply;
    },
  };
}

const fcall = (key: string): Command => ["fcall", "idemkey_claim", 1, key];

describe("coalesced", () => {
  it("sends the commands of one turn in one pipeline, in order, each settling with its own reply or error", async () => {
    const fake = fakeClient(([, , , key]) =>
      key === "b" ? [new Error("ERR b"), null] : [null, `ok ${key}`],
    );
    const send = coalesced(fake.client, fake.send);
    const results = await Promise.allSettled([send(fcall("a")), send(fcall("b")), send(fcall("c"))]);
    expect(fake.pipelines).toEqual([[fcall("a"), fcall("b"), fcall("c")]]);
    expect(fake.direct).toEqual([]);
    expect(results).toEqual([
      { status: "fulfilled", value: "ok a" },
      { status: "rejected", reason: new Error("ERR b") },
      { status: "fulfilled", value: "ok c" },
    ]);
  });

  it("sends a lone command directly, and the next turn's commands in a pipeline of their own", async () => {
    const fake = fakeClient(([, , , key]) => [null, key]);
    const send = coalesced(fake.client, fake.send);
    expect(await send(fcall("a"))).toBe("a");
    expect(await Promise.all([send(fcall("b")), send(fcall("c"))])).toEqual(["b", "c"]);
    expect(fake.direct).toEqual([fcall("a")]);
    expect(fake.pipelines).toEqual([[fcall("b"), fcall("c")]]);
  });

  it("rejects every command of a pipeline whose exec fails (a connection lost), each sent once", async () => {
    const lost = new Error("Connection is closed.");
    const fake = fakeClient(() => [null, "never"], lost);
    const send = coalesced(fake.client, fake.send);
    const results = await Promise.allSettled([send(fcall("a")), send(fcall("b"))]);
    expect(results.map((r) => r.status === "rejected" && r.reason)).toEqual([lost, lost]);
    expect(fake.pipelines).toHaveLength(1);
    expect(fake.direct).toEqual([]);
  });
});

/**
 * The same on a real ioredis client and a private redis-server of the test's own (its INFO commandstats count only
 * this test's commands), behind the test's TCP fault proxy for the lost reply.
 */
const available = redisServerAvailable();
if (!available) {
  if (process.env.CI === "true") throw new Error("CI=true requires redis-server on the PATH for these tests");
  console.warn("SKIPPED the coalescing tests on a real server: no redis-server on the PATH");
}
const onServer = available ? describe : describe.skip;

onServer("coalesced, through redisStore on ioredis and a real server", () => {
  let server: PrivateRedis;
  let proxy: FaultProxy;
  const clients: Redis[] = [];
  const client = (port: number) => {
    const c = new Redis(port, "127.0.0.1");
    c.on("error", () => {}); // the lost reply below resets the connection on purpose
    clients.push(c);
    return c;
  };
  beforeAll(async () => {
    server = await privateRedis();
    proxy = await faultProxy(server.port);
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await proxy?.close();
    await server?.stop();
  });

  /** The store over a client whose `pipeline` calls are counted, its layout checked and its library loaded. */
  async function counted(port: number, prefix: string) {
    const io = client(port);
    const pipelines: number[] = [];
    const spied = new Proxy(io, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property === "pipeline")
          return (commands: unknown[]) => {
            pipelines.push(commands.length);
            return value.call(target, commands);
          };
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const store = redisStore(spied, { prefix });
    await store.get("warm-up"); // the layout check and FUNCTION LOAD, so that what follows is only claims
    return { store, pipelines };
  }

  const fcalls = async (admin: Redis) =>
    Number(/cmdstat_fcall:calls=(\d+)/.exec(await admin.info("commandstats"))?.[1] ?? 0);

  it("sends 32 concurrent claims of new keys in pipelines, each once, and each makes its record", async () => {
    const prefix = `{coalesce-${randomUUID()}}:`;
    const { store, pipelines } = await counted(server.port, prefix);
    const admin = client(server.port);
    const before = await fcalls(admin);
    const keys = Array.from({ length: 32 }, (_, i) => `k${i}`);
    const results = await Promise.all(
      keys.map((key, i) => store.claim(key, { ...claimInput, token: `t${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(keys.map(() => "claimed"));
    expect(pipelines.reduce((a, b) => a + b, 0)).toBe(32);
    expect(await fcalls(admin)).toBe(before + 32);
    for (const [i, key] of keys.entries()) {
      expect(await admin.hget(`${prefix}r:${key}`, "token")).toBe(`t${i}`);
    }
  });

  it("gives one of 16 concurrent claims of one key the record, in one pipeline, and the others exists", async () => {
    const { store, pipelines } = await counted(server.port, `{coalesce-${randomUUID()}}:`);
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) => store.claim("same", { ...claimInput, token: `t${i}` })),
    );
    expect(pipelines).toEqual([16]);
    expect(results.filter((r) => r.status === "claimed")).toHaveLength(1);
    expect(results.filter((r) => r.status === "exists")).toHaveLength(15);
  });

  it("on a lost reply to a pipeline, settles every claim once: each key's record is its own claim's, none twice", async () => {
    const prefix = `{coalesce-${randomUUID()}}:`;
    const { store, pipelines } = await counted(proxy.port, prefix);
    const admin = client(server.port);
    const connections = proxy.connections;
    const dropped = proxy.dropNextReply();
    const keys = Array.from({ length: 8 }, (_, i) => `lost${i}`);
    const results = await Promise.allSettled(
      keys.map((key, i) => store.claim(key, { ...claimInput, token: `t${i}` })),
    );
    await dropped;
    expect(pipelines[0]).toBe(8);
    expect(proxy.connections).toBeGreaterThan(connections); // the reply was lost: the client connected again
    for (const [i, key] of keys.entries()) {
      const result = results[i]!;
      // ioredis sends the unanswered commands again once it reconnects; the same token again is the same claim
      // (the resend rule), so a claim resolves as claimed, or fails with a StoreError saying the outcome is open.
      if (result.status === "fulfilled") expect(result.value.status).toBe("claimed");
      else expect(result.reason).toBeInstanceOf(StoreError);
      const token = await admin.hget(`${prefix}r:${key}`, "token");
      if (token !== null) expect(token).toBe(`t${i}`);
      if (result.status === "fulfilled") expect(token).toBe(`t${i}`);
    }
  });
});
