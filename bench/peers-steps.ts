import { cpuUsage } from "node:process";
import express from "express";
import inject from "light-my-request";
import { bundleBefore } from "./before.js";
import { countAllocations, exposedGc } from "./heap-bytes.js";
import { CHARGE_BODY } from "./load.js";
import { type Charge, PEER_PATH, PEERS, REPLAY_MARK } from "./peers-apps.js";
import { median, spread } from "./rounds.js";
import { connectRedis, deleteKeys, redisCpuUs } from "./services.js";
import { printTable } from "./table.js";

/**
 * The peers bench without sockets (issue 44): every contender of bench/peers-apps.ts on one Express app each, the
 * same trivial handler behind all of them, driven in this process by light-my-request, so that what is counted is
 * the library's own work (and its store client's) rather than HTTP parsing and the scheduler's noise. CPU per
 * request is this process's CPU (`process.cpuUsage`, user + system) over a batch of requests, plus on Redis the
 * private redis-server's own (`INFO cpu`) over the same batch; bytes are the V8 heap's allocations over it.
 *
 * Run compiled under plain node with `--expose-gc` (bench/index.ts does), with the private redis-server the bench
 * driver starts (IDEMKEY_REDIS_URL): another client on a shared server would count in its CPU.
 *
 * IDEMKEY_BENCH_PEERS=bare,idemkey-memory,... narrows the contenders, IDEMKEY_BENCH_KINDS=fresh (or replay) and
 * IDEMKEY_BENCH_IN_FLIGHT=1 (or 16) the rows, for a profile of one path; IDEMKEY_BENCH_ROUNDS and
 * IDEMKEY_BENCH_BATCH change the rounds and the requests per batch; IDEMKEY_BENCH_BEFORE=<dir> adds an earlier
 * src/ in the same rounds (bench/before.ts).
 */
const ROUNDS = Number(process.env.IDEMKEY_BENCH_ROUNDS ?? 7);
const BATCH = Number(process.env.IDEMKEY_BENCH_BATCH ?? 400);
const IN_FLIGHT = (process.env.IDEMKEY_BENCH_IN_FLIGHT?.split(",").map(Number) ?? [
  1, 16,
]) as readonly number[];
const KINDS = (process.env.IDEMKEY_BENCH_KINDS?.split(",") ?? ["fresh", "replay"]) as readonly Kind[];
const ONLY = process.env.IDEMKEY_BENCH_PEERS?.split(",");
const REPLAY_KEYS = 50;
/** Targets (issue 44): CPU per request at most this times the least-CPU peer's that runs no duplicate. */
const TARGET = { memory: 1.0, Redis: 1.1 } as const;
/** Peers that ran one key more than once under concurrent duplicates in the peers bench: no ratio against them. */
const DUPLICATING = ["express-idempotency-memory", "express-idempotency-redis"];
const PREFIX = `{idemkey-bench-peers-steps-${process.pid.toString(36)}}:`;

type Kind = "fresh" | "replay";

interface Row {
  peer: string;
  kind: Kind;
  inFlight: number;
  /** Per round: Node's and redis-server's CPU per request (µs), and bytes allocated per request. */
  nodeUs: number[];
  redisUs: number[];
  bytes: number[];
}

interface Contender {
  app: express.Express;
  runs: () => number;
  close: () => Promise<void>;
}

async function mount(name: string): Promise<Contender> {
  let runs = 0;
  // The one handler every contender runs: no work of its own, so that all that differs is the library.
  const run = async (body: Charge) => {
    runs++;
    return { id: "ch_1", amount: body.amount, currency: body.currency, status: "succeeded" };
  };
  const app = express();
  app.use(express.json());
  const close = await PEERS[name]!.mount(app, PEER_PATH, run, `${PREFIX}${name}:`);
  return { app, runs: () => runs, close };
}

async function send(app: express.Express, key: string): Promise<void> {
  const response = await inject(app, {
    method: "POST",
    url: PEER_PATH,
    headers: { "content-type": "application/json", "idempotency-key": key },
    payload: CHARGE_BODY,
  });
  if (response.statusCode !== 201) {
    throw new Error(`peers-steps: ${key} answered ${response.statusCode} ${response.body}`);
  }
}

/** `count` requests, `inFlight` of them at a time, the i-th with key `keyOf(i)`. */
async function drive(app: express.Express, count: number, inFlight: number, keyOf: (i: number) => string) {
  let next = 0;
  const worker = async () => {
    while (next < count) await send(app, keyOf(next++));
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

export async function benchPeersSteps(): Promise<void> {
  const gc = exposedGc("peers-steps");
  const privateUrl = process.env.IDEMKEY_REDIS_URL;
  const redis = privateUrl === undefined ? undefined : await connectRedis();
  if (privateUrl === undefined) {
    console.log(
      "peers-steps: Redis rows skipped: no private redis-server (bench/index.ts starts one if it can)",
    );
  }
  const before = await bundleBefore();
  if (before !== undefined) process.env.IDEMKEY_BENCH_BEFORE_MODULE = before;
  const names = Object.keys(PEERS)
    .filter((name) => !DUPLICATING.includes(name))
    .filter((name) => redis !== undefined || PEERS[name]!.store !== "Redis")
    .filter((name) => before !== undefined || PEERS[name]!.library !== "idemkey before")
    .filter((name) => ONLY === undefined || ONLY.includes(name));
  const contenders = new Map<string, Contender>();
  for (const name of names) contenders.set(name, await mount(name));

  try {
    for (const [name, { app, runs }] of contenders) {
      if (name === "bare") continue;
      await drive(app, REPLAY_KEYS, 1, (i) => `${PREFIX}${REPLAY_MARK}${i}`);
      if (runs() !== REPLAY_KEYS)
        throw new Error(`peers-steps: ${name} ran ${runs()} of ${REPLAY_KEYS} keys`);
    }
    const rows: Row[] = [];
    for (const inFlight of IN_FLIGHT) {
      for (const name of names) {
        for (const kind of name === "bare" ? (["fresh"] as const) : KINDS) {
          rows.push({ peer: name, kind, inFlight, nodeUs: [], redisUs: [], bytes: [] });
        }
      }
    }

    let fresh = 0;
    const batch = async (row: Row, record: boolean) => {
      const { app, runs } = contenders.get(row.peer)!;
      const onRedis = PEERS[row.peer]!.store === "Redis";
      const keyOf =
        row.kind === "fresh"
          ? () => `${PREFIX}fresh-${fresh++}`
          : (i: number) => `${PREFIX}${REPLAY_MARK}${i % REPLAY_KEYS}`;
      const ran = runs();
      const redisBefore = onRedis ? await redisCpuUs(redis!) : 0;
      const allocated = countAllocations(gc);
      const cpu = cpuUsage();
      await drive(app, BATCH, row.inFlight, keyOf);
      const used = cpuUsage(cpu);
      const bytes = allocated();
      const redisUs = onRedis ? (await redisCpuUs(redis!)) - redisBefore : 0;
      // The handler's own count says what the library did: every fresh key run once, no replay run again.
      const expected = row.kind === "fresh" || row.peer === "bare" ? BATCH : 0;
      if (runs() - ran !== expected) {
        throw new Error(
          `peers-steps: ${row.peer} ${row.kind} ran the handler ${runs() - ran} times, not ${expected}`,
        );
      }
      if (!record) return;
      row.nodeUs.push((used.user + used.system) / BATCH);
      row.redisUs.push(redisUs / BATCH);
      row.bytes.push(bytes / BATCH);
    };

    for (const row of rows) await batch(row, false);
    // Rows take turns, each round starting further along the list, so that a drift in the machine's load falls on
    // every row alike and no row always follows the same one.
    for (let round = 0; round < ROUNDS; round++) {
      const start = Math.round((round * rows.length) / ROUNDS);
      for (let i = 0; i < rows.length; i++) await batch(rows[(start + i) % rows.length]!, true);
    }
    report(rows);
  } finally {
    for (const { close } of contenders.values()) await close();
    if (redis !== undefined) {
      await deleteKeys(redis, PREFIX);
      redis.disconnect();
    }
  }
}

const cpuOf = (row: Row) => row.nodeUs.map((us, i) => us + row.redisUs[i]!);
const label = (peer: string) => `${PEERS[peer]!.library}, ${PEERS[peer]!.store}`;

function report(rows: Row[]): void {
  const find = (peer: string, kind: Kind, inFlight: number) =>
    rows.find((r) => r.peer === peer && r.kind === kind && r.inFlight === inFlight);
  const floor = (inFlight: number) => find("bare", "fresh", inFlight);
  printTable(
    `peers in-process (light-my-request, Express 5, the same trivial handler), ${BATCH} requests per batch, ${ROUNDS} rounds in rotated order; CPU per request = this process's (process.cpuUsage) + the private redis-server's (INFO cpu), µs, median (min-max) of the rounds`,
    ["contender", "keys", "in flight", "CPU µs/req", "of which Redis", "KB/req", "over the floor, µs"],
    rows.map((row) => {
      const bare = floor(row.inFlight);
      const over =
        row.peer === "bare" || bare === undefined
          ? ""
          : spread(
              cpuOf(row).map((us, i) => us - cpuOf(bare)[i]!),
              0,
            );
      return [
        label(row.peer),
        row.peer === "bare" ? "-" : row.kind,
        String(row.inFlight),
        spread(cpuOf(row), 0),
        PEERS[row.peer]!.store === "Redis" ? spread(row.redisUs, 0) : "",
        (median(row.bytes) / 1024).toFixed(1),
        over,
      ];
    }),
  );

  // Paired by round: the rows of one round ran side by side, so their ratio cancels the load both met.
  const ratios: string[][] = [];
  const peers = ["node-idempotency-memory", "node-idempotency-redis", "powertools-redis"];
  for (const row of rows) {
    if (PEERS[row.peer]!.library !== "idemkey" && !PEERS[row.peer]!.library.startsWith("idemkey (")) continue;
    const store = PEERS[row.peer]!.store as "memory" | "Redis";
    const against = peers
      .map((peer) => find(peer, row.kind, row.inFlight))
      .filter((peer): peer is Row => peer !== undefined && PEERS[peer.peer]!.store === store);
    if (against.length === 0) continue;
    const best = against.reduce((a, b) => (median(cpuOf(a)) <= median(cpuOf(b)) ? a : b));
    const paired = (peer: Row) => cpuOf(row).map((us, i) => us / cpuOf(peer)[i]!);
    const verdict = median(paired(best)) <= TARGET[store] ? "met" : "not met";
    ratios.push([
      label(row.peer),
      row.kind,
      String(row.inFlight),
      ...["node-idempotency-memory", "node-idempotency-redis", "powertools-redis"].map((name) => {
        const peer = against.find((p) => p.peer === name);
        return peer === undefined ? "" : spread(paired(peer), 2);
      }),
      `≤ ${TARGET[store].toFixed(1)} of ${PEERS[best.peer]!.library}: ${verdict}`,
    ]);
  }
  printTable(
    "idemkey's CPU per request over each peer on the same store, paired by round, median (min-max); express-idempotency left out (it ran duplicates in the peers bench)",
    [
      "idemkey",
      "keys",
      "in flight",
      "/ @node-idempotency memory",
      "/ @node-idempotency Redis",
      "/ Powertools",
      "target",
    ],
    ratios,
  );

  const now: string[][] = [];
  for (const row of rows) {
    if (PEERS[row.peer]!.library !== "idemkey before") continue;
    const after = find(row.peer.replace("idemkey-before-", "idemkey-"), row.kind, row.inFlight);
    if (after === undefined) continue;
    const a = cpuOf(after);
    const b = cpuOf(row);
    now.push([
      label(after.peer),
      row.kind,
      String(row.inFlight),
      spread(
        a.map((us, i) => us / b[i]!),
        3,
      ),
      spread(
        b.map((us, i) => us - a[i]!),
        1,
      ),
      `${(median(row.bytes) / 1024).toFixed(1)} -> ${(median(after.bytes) / 1024).toFixed(1)}`,
    ]);
  }
  if (now.length > 0) {
    printTable(
      `idemkey now / idemkey before (${process.env.IDEMKEY_BENCH_BEFORE}), paired by round, median (min-max)`,
      ["idemkey", "keys", "in flight", "CPU ratio", "µs saved", "KB/req before -> now"],
      now,
    );
  }
}
