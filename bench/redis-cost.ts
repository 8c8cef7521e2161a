import { readFileSync } from "node:fs";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { CachePersistenceLayer } from "@aws-lambda-powertools/idempotency/cache";
import { createClient } from "@redis/client";
import { Redis } from "ioredis";
import { createHarness, defineTool } from "../src/harness/index.js";
import { script } from "../src/redis/client.js";
import { redisStore } from "../src/redis/index.js";
import { CLAIM, UPDATE } from "../src/redis/scripts.js";
import { memoryStore } from "../src/store/memory.js";
import type { ClaimInput, RecordPatch, Store } from "../src/store/types.js";
import { privateRedis } from "../test/support/redis-server.js";
import { small } from "./payloads.js";
import { median } from "./rounds.js";
import { printTable } from "./table.js";

const PREFIX = "{idemkey-cost}:";
const CALLS = Number(process.env.CALLS ?? 2000);
const ROUNDS = 5;
/** The top-level commands a script runs as: by EVALSHA, or as a Redis 7 function (FCALL, FCALL_RO). */
const SCRIPTS = ["evalsha", "fcall", "fcall_ro"];

type Payload = typeof small & { n: number };
const payload = (n: number): Payload => ({ ...small, n });

/** The private server's CPU time so far (user + system), in µs, from /proc. */
function serverCpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // utime and stime, fields 14 and 15 of stat, in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** `INFO commandstats` as command -> total µs. */
async function commandUsec(redis: Redis): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await redis.info("commandstats")).split("\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) out.set(m[1]!, Number(m[3]));
  }
  return out;
}

/**
 * Where a fresh key's time goes on Redis, for idemkey and Powertools alike: on a private `redis-server` (its
 * `INFO commandstats` and its process's CPU time are this bench's alone), each contender runs CALLS calls in turn,
 * ROUNDS times; per call: wall time, this process's CPU (client side: harness, client library, store), the server
 * process's CPU (parsing, scripts, replies, its share of the sockets) and the time the top-level commands report
 * (`EVALSHA` includes the commands its script calls). Medians over the rounds.
 */
export async function benchRedisCost(): Promise<void> {
  const server = await privateRedis();
  const admin = new Redis(server.port);
  const pid = Number(/process_id:(\d+)/.exec(await admin.info("server"))![1]);
  const io = new Redis(server.port);
  const node = createClient({ url: server.url });
  await node.connect();

  const tool = defineTool({
    name: "sendReport",
    effect: "keyed",
    run: async (args: Payload) => ({ ok: true, n: args.n }),
  });
  const onIo = createHarness({ store: redisStore(io, { prefix: PREFIX }) });
  const onNode = createHarness({ store: redisStore(node, { prefix: PREFIX }) });
  const onIoEvalsha = createHarness({
    store: redisStore({ evalsha: io.evalsha.bind(io), eval: io.eval.bind(io) }, { prefix: PREFIX }),
  });
  const onMemory = createHarness({ store: memoryStore() });
  // The store without indexes (a fresh key: one plain SET NX GET, then the completion script), a prefix of its own.
  const onLean = createHarness({ store: redisStore(io, { prefix: `${PREFIX}lean:`, indexes: false }) });
  // The same harness and store on scripts that do nothing but read TIME and give the fresh path's replies: what a
  // fresh key would cost if the claim and completion scripts took no Redis time beyond an EVALSHA's own.
  const stamp =
    "local t = redis.call('TIME') local now = string.format('%.0f', t[1] * 1000 + math.floor(t[2] / 1000))";
  const noop = new Map([
    [script(CLAIM).sha, await io.script("LOAD", `${stamp} return now`)],
    [
      script(UPDATE).sha,
      await io.script("LOAD", `${stamp} return {now, '9999999999999', false, 'pending', 'fp', now, false}`),
    ],
  ]) as Map<string, string>;
  const noopClient = {
    evalsha: (sha: string, numKeys: number, ...rest: string[]) =>
      io.evalsha(noop.get(sha) ?? sha, numKeys, ...rest),
    eval: (source: string, numKeys: number, ...rest: string[]) => io.eval(source, numKeys, ...rest),
  };
  const onNoop = createHarness({ store: redisStore(noopClient, { prefix: PREFIX }) });

  // The claim and completion the harness sends for a fresh key, to replay them on the store alone.
  let claimInput: ClaimInput | undefined;
  let completion: RecordPatch | undefined;
  const ioStore = redisStore(io, { prefix: PREFIX });
  const spy: Store = {
    ...ioStore,
    claim: (key, input) => {
      claimInput ??= input;
      return ioStore.claim(key, input);
    },
    update: (key, expect, patch) => {
      completion ??= patch;
      return ioStore.update(key, expect, patch);
    },
  };
  await createHarness({ store: spy }).call("spy", tool, payload(-1));
  // The keys the replays ask for.
  await onIo.call("io", tool, payload(0));
  await onNode.call("node", tool, payload(0));

  const config = new IdempotencyConfig({});
  config.registerLambdaContext({ getRemainingTimeInMillis: () => 30_000 } as Parameters<
    IdempotencyConfig["registerLambdaContext"]
  >[0]);
  const powertools = makeIdempotent(async (args: Payload) => ({ ok: true, n: args.n }), {
    persistenceStore: new CachePersistenceLayer({ client: node }),
    config,
    keyPrefix: "powertools",
  });
  const value = JSON.stringify({ status: "INPROGRESS", expiration: 0, data: payload(0) });

  let n = 0;
  const claimed: [key: string, token: string][] = [];
  const contenders: Record<string, { run: () => Promise<unknown>; commands: string[] }> = {
    "harness fresh, memory store": { run: () => onMemory.call("m", tool, payload(n++)), commands: [] },
    "harness fresh, ioredis": { run: () => onIo.call("io", tool, payload(n++)), commands: SCRIPTS },
    // A replay of a completed key: one script, which finds the record and answers it.
    "harness replay, ioredis": { run: () => onIo.call("io", tool, payload(0)), commands: SCRIPTS },
    // The same store on a client without the function commands: every script by EVALSHA (Redis before 7.0).
    "harness fresh, ioredis, EVALSHA only": {
      run: () => onIoEvalsha.call("io-evalsha", tool, payload(n++)),
      commands: SCRIPTS,
    },
    "harness fresh, ioredis, no indexes": {
      run: () => onLean.call("lean", tool, payload(n++)),
      commands: [...SCRIPTS, "set"],
    },
    "harness fresh, ioredis, no-op scripts": {
      run: () => onNoop.call("noop", tool, payload(n++)),
      commands: ["evalsha"],
    },
    "harness fresh, node-redis": {
      run: () => onNode.call("node", tool, payload(n++)),
      commands: SCRIPTS,
    },
    "harness replay, node-redis": { run: () => onNode.call("node", tool, payload(0)), commands: SCRIPTS },
    // The harness's own claim and completion on the store alone, split: each claim leaves a key for a completion.
    "store claim (fresh key), ioredis": {
      run: async () => {
        const key = `store:${n++}`;
        claimed.push([key, (await ioStore.claim(key, claimInput!)).record.token!]);
      },
      commands: SCRIPTS,
    },
    "store completion, ioredis": {
      run: async () => {
        const [key, token] = claimed.shift()!;
        await ioStore.update(key, { token, state: "pending" }, completion!);
      },
      commands: SCRIPTS,
    },
    "Powertools fresh, node-redis": { run: () => powertools(payload(n++)), commands: ["set", "get", "del"] },
    "SET NX + SET, node-redis": {
      run: async () => {
        const key = `floor:${n++}`;
        await node.set(key, value, { NX: true, PX: 60_000 });
        await node.set(key, value, { PX: 60_000 });
      },
      commands: ["set"],
    },
  };

  const samples = new Map<string, { wall: number[]; client: number[]; server: number[]; usec: number[] }>();
  for (const name of Object.keys(contenders))
    samples.set(name, { wall: [], client: [], server: [], usec: [] });
  // Warm up (as many claims as completions, so the queue between them stays even).
  for (const { run } of Object.values(contenders)) for (let i = 0; i < 200; i++) await run();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, { run, commands }] of Object.entries(contenders)) {
      await admin.config("RESETSTAT");
      const usecBefore = await commandUsec(admin);
      const serverBefore = serverCpu(pid);
      const cpuBefore = process.cpuUsage();
      const start = performance.now();
      for (let i = 0; i < CALLS; i++) await run();
      const wall = ((performance.now() - start) * 1000) / CALLS;
      const cpu = process.cpuUsage(cpuBefore);
      const server = (serverCpu(pid) - serverBefore) / CALLS;
      const usecAfter = await commandUsec(admin);
      const usec = commands.reduce((sum, c) => sum + (usecAfter.get(c) ?? 0) - (usecBefore.get(c) ?? 0), 0);
      const s = samples.get(name)!;
      s.wall.push(wall);
      s.client.push((cpu.user + cpu.system) / CALLS);
      s.server.push(server);
      s.usec.push(usec / CALLS);
    }
  }
  printTable(
    `where a fresh key's time goes, private redis-server, ${CALLS} calls x ${ROUNDS} rounds (µs per call, medians)`,
    ["contender", "wall", "client CPU", "server CPU", "commands' own time"],
    [...samples].map(([name, s]) => [
      name,
      median(s.wall).toFixed(1),
      median(s.client).toFixed(1),
      median(s.server).toFixed(1),
      median(s.usec).toFixed(1),
    ]),
  );

  io.disconnect();
  admin.disconnect();
  await node.quit();
  await server.stop();
}
