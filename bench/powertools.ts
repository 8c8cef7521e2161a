import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { CachePersistenceLayer } from "@aws-lambda-powertools/idempotency/cache";
import { createClient } from "@redis/client";
import { createHarness, defineTool } from "../src/harness/index.js";
import { type NodeRedisLike, redisStore } from "../src/redis/index.js";
import { small } from "./payloads.js";
import { inRounds } from "./rounds.js";
import {
  type CommandStat,
  commandStats,
  connectRedis,
  deleteKeys,
  REDIS_URL,
  statsDelta,
} from "./services.js";
import { REDIS_PREFIX } from "./stores.js";
import { printTable } from "./table.js";

const POWERTOOLS_PREFIX = "idemkey-bench-powertools";
const REPLAYS = 1000;
/** Targets: idemkey's overhead per call at most this many times Powertools' (issue 15; its stretch, issue 5's 0.8). */
const TARGET = 1.0;
const STRETCH = 0.8;

type Payload = typeof small & { n: number };
const payload = (n: number): Payload => ({ ...small, n });

/** Counts the commands a library sends through a client, so the table can say how many round trips a call costs. */
function counted<T extends object>(
  client: T,
  methods: readonly (keyof T)[],
): { client: T; sent: () => number } {
  let sent = 0;
  const wrapper = {} as T;
  for (const method of methods) {
    const fn = client[method] as (...args: unknown[]) => unknown;
    (wrapper as Record<keyof T, unknown>)[method] = (...args: unknown[]) => {
      sent++;
      return fn.apply(client, args);
    };
  }
  return { client: wrapper, sent: () => sent };
}

/**
 * idemkey's harness on `redisStore` against `makeIdempotent` from `@aws-lambda-powertools/idempotency` with its
 * `CachePersistenceLayer`, on the same Redis, making the same no-op async function idempotent for the same payload:
 * fresh payloads (claim, run, save) and replays of completed ones. idemkey runs on both clients it supports; the
 * node-redis rows share Powertools' very connection.
 */
export async function benchPowertools(): Promise<void> {
  const io = await connectRedis();
  if (io === undefined) return;
  const node = createClient({ url: REDIS_URL });
  await node.connect();
  await deleteKeys(io, REDIS_PREFIX);
  await deleteKeys(io, POWERTOOLS_PREFIX);

  const ran = { idemkey: 0, powertools: 0 };
  const tool = defineTool({
    name: "sendReport",
    effect: "keyed",
    run: async (args: Payload) => {
      ran.idemkey++;
      return { ok: true, n: args.n };
    },
  });
  const bare = async (args: Payload) => ({ ok: true, n: args.n });

  // With the function commands too: without them the store would run by EVALSHA, which no user's client makes it do.
  const ioCount = counted(io, ["evalsha", "eval", "fcall", "fcall_ro", "function"]);
  const nodeCount = counted(node as unknown as NodeRedisLike, [
    "evalSha",
    "eval",
    "fCall",
    "fCallRo",
    "functionLoad",
  ]);
  const onIo = createHarness({ store: redisStore(ioCount.client, { prefix: REDIS_PREFIX }) });
  const onNode = createHarness({ store: redisStore(nodeCount.client, { prefix: REDIS_PREFIX }) });
  // The store without indexes (no list or purge) under a prefix of its own: a fresh key is a plain SET NX GET.
  const leanPrefix = `${REDIS_PREFIX}lean:`;
  await deleteKeys(io, leanPrefix);
  const leanIoCount = counted(io, ["evalsha", "eval", "set"]);
  const leanNodeCount = counted(node, ["evalSha", "eval", "set"]);
  const leanIo = createHarness({
    store: redisStore(leanIoCount.client, { prefix: leanPrefix, indexes: false }),
  });
  const leanNode = createHarness({
    store: redisStore(leanNodeCount.client as unknown as NodeRedisLike, {
      prefix: leanPrefix,
      indexes: false,
    }),
  });

  const ptCount = counted(node, ["get", "set", "del"]);
  const config = new IdempotencyConfig({});
  // Outside Lambda there is no remaining time; without one Powertools warns on every call and sets no in-progress
  // expiry. 30 s matches idemkey's default lease.
  config.registerLambdaContext({ getRemainingTimeInMillis: () => 30_000 } as Parameters<
    IdempotencyConfig["registerLambdaContext"]
  >[0]);
  const powertools = makeIdempotent(
    async (args: Payload) => {
      ran.powertools++;
      return { ok: true, n: args.n };
    },
    {
      persistenceStore: new CachePersistenceLayer({ client: ptCount.client }),
      config,
      keyPrefix: POWERTOOLS_PREFIX,
    },
  );

  for (let i = 0; i < REPLAYS; i++) {
    await onIo.call("pt-io-replay", tool, payload(i));
    await onNode.call("pt-node-replay", tool, payload(i));
    await leanIo.call("pt-lean-io-replay", tool, payload(i));
    await leanNode.call("pt-lean-node-replay", tool, payload(i));
    await powertools(payload(-1 - i));
  }
  const next = {
    ioFresh: 0,
    nodeFresh: 0,
    ptFresh: 0,
    ioReplay: 0,
    nodeReplay: 0,
    ptReplay: 0,
    leanIoFresh: 0,
    leanNodeFresh: 0,
    leanIoReplay: 0,
    leanNodeReplay: 0,
  };
  const contenders: Record<string, { run: () => Promise<unknown>; sent: () => number }> = {
    "bare function": { run: () => bare(payload(0)), sent: () => 0 },
    "one GET round trip (node-redis)": { run: () => node.get("idemkey-bench-absent"), sent: () => 0 },
    "idemkey fresh (ioredis)": {
      run: () => onIo.call("pt-io-fresh", tool, payload(next.ioFresh++)),
      sent: ioCount.sent,
    },
    "idemkey fresh (node-redis)": {
      run: () => onNode.call("pt-node-fresh", tool, payload(next.nodeFresh++)),
      sent: nodeCount.sent,
    },
    "idemkey fresh (ioredis, no indexes)": {
      run: () => leanIo.call("pt-lean-io-fresh", tool, payload(next.leanIoFresh++)),
      sent: leanIoCount.sent,
    },
    "idemkey fresh (node-redis, no indexes)": {
      run: () => leanNode.call("pt-lean-node-fresh", tool, payload(next.leanNodeFresh++)),
      sent: leanNodeCount.sent,
    },
    "Powertools fresh (node-redis)": { run: () => powertools(payload(next.ptFresh++)), sent: ptCount.sent },
    "idemkey replay (ioredis)": {
      run: () => onIo.call("pt-io-replay", tool, payload(next.ioReplay++ % REPLAYS)),
      sent: ioCount.sent,
    },
    "idemkey replay (node-redis)": {
      run: () => onNode.call("pt-node-replay", tool, payload(next.nodeReplay++ % REPLAYS)),
      sent: nodeCount.sent,
    },
    "idemkey replay (ioredis, no indexes)": {
      run: () => leanIo.call("pt-lean-io-replay", tool, payload(next.leanIoReplay++ % REPLAYS)),
      sent: leanIoCount.sent,
    },
    "idemkey replay (node-redis, no indexes)": {
      run: () => leanNode.call("pt-lean-node-replay", tool, payload(next.leanNodeReplay++ % REPLAYS)),
      sent: leanNodeCount.sent,
    },
    "Powertools replay (node-redis)": {
      run: () => powertools(payload(-1 - (next.ptReplay++ % REPLAYS))),
      sent: ptCount.sent,
    },
  };

  // Round trips per call, counted on a few calls of each before timing (the counters are shared per client).
  const trips = new Map<string, number>();
  for (const [name, { run, sent }] of Object.entries(contenders)) {
    const before = sent();
    for (let i = 0; i < 20; i++) await run();
    trips.set(name, (sent() - before) / 20);
  }

  const latency = await inRounds(
    Object.fromEntries(Object.entries(contenders).map(([name, { run }]) => [name, run])),
    { rounds: 6, sliceMs: 250 },
  );

  const concurrent = await atConcurrency(io, contenders);

  // Each fresh call ran its function once and no replay ran it: counted in the functions themselves.
  const freshCalls = next.ioFresh + next.nodeFresh + next.leanIoFresh + next.leanNodeFresh;
  if (ran.idemkey !== 4 * REPLAYS + freshCalls || ran.powertools !== REPLAYS + next.ptFresh) {
    throw new Error(`powertools bench: a replay ran its function (${JSON.stringify({ ran, next })})`);
  }

  const floor = latency.get("bare function")!.p50;
  const overhead = (name: string) => latency.get(name)!.p50 - floor;
  const rows = [...latency].map(([name, l]) => [
    name,
    l.p50.toFixed(1),
    l.p99.toFixed(1),
    String(trips.get(name) ?? 0),
    String(l.count),
  ]);
  printTable(
    "idemkey vs AWS Powertools idempotency on one local Redis: µs per call of a no-op async function",
    ["contender", "p50", "p99", "round trips", "calls"],
    rows,
  );
  const ratio = (kind: "fresh" | "replay", client: string) => {
    const r = overhead(`idemkey ${kind} (${client})`) / overhead(`Powertools ${kind} (node-redis)`);
    const verdict = (target: number) => (r <= target ? "met" : "NOT met");
    return [`${kind}, idemkey on ${client}`, r.toFixed(2), verdict(TARGET), verdict(STRETCH)];
  };
  printTable(
    `overhead per call at p50 (call minus bare function), idemkey / Powertools; target <= ${TARGET}, stretch <= ${STRETCH}`,
    ["keys", "ratio", "target", "stretch"],
    [
      ratio("fresh", "node-redis"),
      ratio("fresh", "ioredis"),
      ratio("fresh", "node-redis, no indexes"),
      ratio("fresh", "ioredis, no indexes"),
      ratio("replay", "node-redis"),
      ratio("replay", "ioredis"),
      ratio("replay", "node-redis, no indexes"),
      ratio("replay", "ioredis, no indexes"),
    ],
  );

  printConcurrent(concurrent, trips);

  await deleteKeys(io, REDIS_PREFIX);
  await deleteKeys(io, POWERTOOLS_PREFIX);
  io.disconnect();
  await node.quit();
}

/** The contenders timed at each concurrency (issue 32): fresh and replay, idemkey on both clients and Powertools. */
const CONCURRENT = [
  "idemkey fresh (ioredis)",
  "idemkey fresh (node-redis)",
  "Powertools fresh (node-redis)",
  "idemkey replay (ioredis)",
  "idemkey replay (node-redis)",
  "Powertools replay (node-redis)",
] as const;
const CONCURRENCY = [1, 64] as const;
/** The commands the clients send; INFO commandstats counts the commands a script runs as well, under their names. */
const TOP_LEVEL = new Set([
  "evalsha",
  "eval",
  "evalsha_ro",
  "eval_ro",
  "fcall",
  "fcall_ro",
  "set",
  "get",
  "del",
]);

interface Concurrent {
  name: string;
  callers: number;
  calls: number;
  ms: number;
  latencies: number[];
  /** What Redis counted while this contender alone was running (server-wide: any other client adds to it). */
  server: Map<string, CommandStat>;
}

/**
 * Each contender with `callers` concurrent callers, each calling again as soon as its call returns, in slices taking
 * turns; INFO commandstats around each slice says what the server did for it (round trips and script time).
 */
async function atConcurrency(
  io: Parameters<typeof commandStats>[0],
  contenders: Record<string, { run: () => Promise<unknown> }>,
): Promise<Concurrent[]> {
  const out: Concurrent[] = [];
  for (const callers of CONCURRENCY) {
    for (const name of CONCURRENT) {
      out.push({ name, callers, calls: 0, ms: 0, latencies: [], server: new Map() });
    }
  }
  const slice = async (row: Concurrent, ms: number, record: boolean) => {
    const { run } = contenders[row.name]!;
    const end = performance.now() + ms;
    const before = record ? await commandStats(io) : undefined;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: row.callers }, async () => {
        while (performance.now() < end) {
          const t = performance.now();
          await run();
          if (record) row.latencies.push((performance.now() - t) * 1000);
          if (record) row.calls++;
        }
      }),
    );
    if (!record) return;
    row.ms += performance.now() - start;
    for (const [command, stat] of statsDelta(before!, await commandStats(io))) {
      const was = row.server.get(command) ?? { calls: 0, usec: 0 };
      row.server.set(command, { calls: was.calls + stat.calls, usec: was.usec + stat.usec });
    }
  };
  for (const row of out) await slice(row, 100, false);
  for (let round = 0; round < 5; round++) for (const row of out) await slice(row, 300, true);
  return out;
}

function printConcurrent(rows: Concurrent[], trips: Map<string, number>): void {
  const rate = (row: Concurrent) => (row.calls * 1000) / row.ms;
  const table = rows.map((row) => {
    const sorted = Float64Array.from(row.latencies).sort();
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
    // Redis's own counters: the commands clients sent (a script's time includes the commands it ran), and the
    // commands run inside scripts, per call; INFO itself is left out.
    const sent = [...row.server].filter(([command]) => TOP_LEVEL.has(command));
    const inside = [...row.server].filter(([command]) => !TOP_LEVEL.has(command) && command !== "info");
    const perCall = (commands: [string, CommandStat][], f: (stat: CommandStat) => number) =>
      commands.reduce((sum, [, stat]) => sum + f(stat), 0) / row.calls;
    const mix = sent.map(([command, stat]) => `${command} ${(stat.usec / stat.calls).toFixed(1)}`).join(", ");
    const kind = row.name.includes("fresh") ? "fresh" : "replay";
    const powertools = rows.find(
      (r) => r.callers === row.callers && r.name === `Powertools ${kind} (node-redis)`,
    )!;
    // Time per call at this concurrency is 1 / throughput: idemkey's over Powertools'.
    const ratio = row.name.startsWith("idemkey") ? rate(powertools) / rate(row) : undefined;
    return [
      row.name,
      String(row.callers),
      rate(row).toFixed(0),
      at(0.5).toFixed(0),
      at(0.99).toFixed(0),
      String(trips.get(row.name) ?? 0),
      perCall(sent, (s) => s.calls).toFixed(2),
      perCall(sent, (s) => s.usec).toFixed(1),
      mix,
      perCall(inside, (s) => s.calls).toFixed(1),
      ratio === undefined ? "" : `${ratio.toFixed(2)} ${ratio <= TARGET ? "met" : "NOT met"}`,
    ];
  });
  printTable(
    `at concurrency 1 and 64, 5 × 300 ms per row: calls/s, µs per call; server counters from INFO commandstats (server-wide); ratio = idemkey's time per call / Powertools', target <= ${TARGET}`,
    [
      "contender",
      "callers",
      "calls/s",
      "p50",
      "p99",
      "round trips",
      "server cmds/call",
      "server µs/call",
      "µs per command",
      "cmds in scripts/call",
      "ratio",
    ],
    table,
  );
}
