import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import { postgresStore } from "../src/postgres/index.js";
import { type RedisCluster, startRedisCluster } from "../test/support/cluster/redis-cluster.js";
import type { DriverMessage, Target, WorkerMessage } from "./scale-out-worker.js";
import {
  type CommandStat,
  commandStats,
  connectPostgres,
  connectRedis,
  deleteKeys,
  PG_URL,
  REDIS_URL,
} from "./services.js";
import { RUN_ID } from "./stores.js";
import { printTable } from "./table.js";

const WORKERS = [1, 2, 4] as const;
/** Calls in flight per worker: a worker is one service process with this many requests at a time. */
const IN_FLIGHT = 8;
const SLICE_MS = process.env.IDEMKEY_BENCH_QUICK === "1" ? 1_500 : 4_000;
const WORKER = fileURLToPath(new URL("./scale-out-worker.ts", import.meta.url));
const TABLE = `idemkey_bench_scaleout_${RUN_ID}`;
const APP = `idemkey-bench-scaleout-${RUN_ID}`;
const prefix = (tag: string) => `{idemkey-bench-scaleout-${RUN_ID}${tag}}:`;

/** CPU seconds a process has used (user + system), from /proc; undefined where it is not readable. */
function cpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** The machine's busy and total CPU time, from /proc/stat, to say how much of the two cores a slice left idle. */
function machineCpu(): { busy: number; total: number } {
  const [, ...ticks] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/);
  const values = ticks.map(Number);
  const idle = values[3]! + values[4]!;
  const total = values.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/** What one slice measured on the server side, beside the calls made. */
interface ServerSide {
  /** Server CPU over the slice, in cores (1.0 = one core busy all along). */
  cpu: string;
  counters: string;
  why: string;
}

/** A store the workers share, with the counters its server keeps. */
interface Shared {
  name: string;
  /** The target of worker `i` (all the same store, or one prefix per worker where the row says so). */
  target(i: number): Target;
  before(): Promise<unknown>;
  /** Called while the workers run, every 200 ms. */
  sample?(): Promise<void>;
  after(before: unknown, calls: number, seconds: number): Promise<ServerSide>;
  close(): Promise<void>;
}

async function postgresShared(): Promise<Shared | undefined> {
  const pool = await connectPostgres();
  if (pool === undefined) return undefined;
  await postgresStore(pool, { table: TABLE }).get("create"); // the table, made once before the workers open it
  const waits = new Map<string, number>();
  const ourPids = new Set<number>();
  const counters = async () => {
    const db = await pool.query(
      "SELECT xact_commit::bigint AS commits FROM pg_stat_database WHERE datname = current_database()",
    );
    const table = await pool.query(
      "SELECT coalesce(n_tup_ins, 0) + coalesce(n_tup_upd, 0) AS writes FROM pg_stat_user_tables WHERE relname = $1",
      [TABLE],
    );
    return { commits: Number(db.rows[0].commits), writes: Number(table.rows[0]?.writes ?? 0) };
  };
  return {
    name: "PostgreSQL (shared), one table",
    target: () => ({ kind: "postgres", url: withApp(PG_URL), table: TABLE }),
    async before() {
      waits.clear();
      ourPids.clear();
      return counters();
    },
    async sample() {
      // What the workers' backends are doing: on CPU (null), waiting for the client, for a lock, for the WAL.
      const { rows } = await pool.query(
        "SELECT pid, coalesce(wait_event_type || ':' || wait_event, state) AS doing FROM pg_stat_activity WHERE application_name = $1",
        [APP],
      );
      for (const row of rows as { pid: number; doing: string }[]) {
        ourPids.add(row.pid);
        waits.set(row.doing, (waits.get(row.doing) ?? 0) + 1);
        cpuAtStart.set(row.pid, cpuAtStart.get(row.pid) ?? cpuSeconds(row.pid) ?? Number.NaN);
      }
    },
    async after(before, calls, seconds) {
      const b = before as { commits: number; writes: number };
      // Backends report their counts when their connection closes (the workers have exited): wait for it to show.
      let now = await counters();
      for (let i = 0; i < 20 && now.writes - b.writes < calls * 2; i++) {
        await sleep(100);
        now = await counters();
      }
      let cpu = 0;
      let readable = 0;
      for (const pid of ourPids) {
        const end = cpuAtEnd.get(pid);
        const start = cpuAtStart.get(pid);
        if (end !== undefined && start !== undefined && !Number.isNaN(start)) {
          cpu += end - start;
          readable++;
        }
      }
      const total = [...waits.values()].reduce((a, c) => a + c, 0);
      const why = [...waits]
        .sort((x, y) => y[1] - x[1])
        .slice(0, 3)
        .map(([doing, n]) => `${doing} ${((100 * n) / total).toFixed(0)}%`)
        .join(", ");
      cpuAtStart.clear();
      cpuAtEnd.clear();
      return {
        cpu: readable > 0 ? `${(cpu / seconds).toFixed(2)} (${readable} backends)` : "not readable",
        counters: `${((now.commits - b.commits) / calls).toFixed(2)} commits/call (database-wide), ${((now.writes - b.writes) / calls).toFixed(2)} row writes/call`,
        why: `backends: ${why}`,
      };
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${TABLE}`);
      await pool.query("DELETE FROM idemkey_meta WHERE name = $1", [TABLE]);
      await pool.end();
    },
  };
}
/** The workers' backends, CPU seconds at their first sample and just before the workers close. */
const cpuAtStart = new Map<number, number>();
const cpuAtEnd = new Map<number, number>();
const withApp = (url: string) => `${url}${url.includes("?") ? "&" : "?"}application_name=${APP}`;

/** Redis's own counters on each node: commands (by name) and CPU, server-wide. */
async function redisCounters(nodes: Redis[]) {
  return Promise.all(
    nodes.map(async (node) => {
      const cpu = String(await node.info("cpu"));
      const seconds = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(cpu)?.[1] ?? 0);
      return { stats: await commandStats(node), cpu: seconds("used_cpu_user") + seconds("used_cpu_sys") };
    }),
  );
}

function redisSide(
  before: Awaited<ReturnType<typeof redisCounters>>,
  after: Awaited<ReturnType<typeof redisCounters>>,
  calls: number,
  seconds: number,
): ServerSide {
  const TOP = new Set(["evalsha", "eval", "set", "get"]);
  const perNode = after.map((node, i) => {
    let sent = 0;
    let usec = 0;
    for (const [command, stat] of node.stats) {
      if (!TOP.has(command)) continue;
      const was: CommandStat = before[i]!.stats.get(command) ?? { calls: 0, usec: 0 };
      sent += stat.calls - was.calls;
      usec += stat.usec - was.usec;
    }
    return { sent, usec, cpu: node.cpu - before[i]!.cpu };
  });
  const sent = perNode.reduce((a, n) => a + n.sent, 0);
  const usec = perNode.reduce((a, n) => a + n.usec, 0);
  return {
    cpu: perNode.map((n) => `${(n.cpu / seconds).toFixed(2)}`).join(" / "),
    counters: `${(sent / calls).toFixed(2)} commands/call, ${(usec / calls).toFixed(0)} µs in them/call`,
    why: `commands per node: ${perNode.map((n) => n.sent).join(" / ")}`,
  };
}

async function redisShared(): Promise<Shared | undefined> {
  const redis = await connectRedis();
  if (redis === undefined) return undefined;
  const p = prefix("");
  return {
    name: "Redis (shared), one prefix",
    target: () => ({ kind: "redis", url: REDIS_URL, prefix: p }),
    before: () => redisCounters([redis]),
    async after(before, calls, seconds) {
      return redisSide(
        before as Awaited<ReturnType<typeof redisCounters>>,
        await redisCounters([redis]),
        calls,
        seconds,
      );
    },
    async close() {
      await deleteKeys(redis, p);
      redis.disconnect();
    },
  };
}

function clusterShared(cluster: RedisCluster, perWorker: boolean): Shared {
  const admins = cluster.nodes.map((node) => node.admin);
  const p = (i: number) => prefix(perWorker ? `-w${i}` : "");
  return {
    name: perWorker
      ? "Redis Cluster (3 masters), a prefix per worker"
      : "Redis Cluster (3 masters), one prefix",
    target: (i) => ({ kind: "cluster", seeds: cluster.seeds, prefix: p(i) }),
    before: () => redisCounters(admins),
    async after(before, calls, seconds) {
      return redisSide(
        before as Awaited<ReturnType<typeof redisCounters>>,
        await redisCounters(admins),
        calls,
        seconds,
      );
    },
    // The cluster is the bench's own and is stopped afterwards: nothing to delete.
    async close() {},
  };
}

interface Worker {
  child: ChildProcess;
  next(): Promise<WorkerMessage>;
}

function startWorker(target: Target, id: string): Worker {
  const child = fork(WORKER, [JSON.stringify(target), id, String(IN_FLIGHT)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const next = () =>
    new Promise<WorkerMessage>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`scale-out worker ${id} exited with ${code}`));
      child.once("exit", onExit);
      child.once("message", (message: WorkerMessage) => {
        child.off("exit", onExit);
        resolve(message);
      });
    });
  return { child, next };
}

/**
 * Scale-out on one shared store (issue 32): 1, 2 and 4 worker processes, each with IN_FLIGHT fresh keyed harness
 * calls in flight, on the shared PostgreSQL (one table), the shared Redis (one prefix) and a Redis Cluster of three
 * masters started here (one prefix, then one per worker). Throughput per doubling, with what the server counted.
 */
export async function benchScaleOut(): Promise<void> {
  const shared: Shared[] = [];
  let cluster: RedisCluster | undefined;
  const rows: string[][] = [];
  try {
    const pg = await postgresShared();
    if (pg) shared.push(pg);
    const redis = await redisShared();
    if (redis) shared.push(redis);
    // Three masters of the bench's own, no replicas and nothing on disk: the cluster tests' own start, less failover.
    cluster = await startRedisCluster({ replicas: 0, aof: false });
    shared.push(clusterShared(cluster, false), clusterShared(cluster, true));

    for (const store of shared) {
      let single: number | undefined;
      let previous: number | undefined;
      for (const count of WORKERS) {
        const workers = Array.from({ length: count }, (_, i) =>
          startWorker(store.target(i), `${count}-${i}`),
        );
        const ready = await Promise.all(workers.map((w) => w.next()));
        if (ready.some((m) => m.type !== "ready")) throw new Error("scale-out: a worker did not get ready");
        const before = await store.before();
        const machine = machineCpu();
        const load = loadavg()[0]!;
        const done = Promise.all(workers.map((w) => w.next()));
        for (const w of workers) w.child.send({ type: "go", ms: SLICE_MS } satisfies DriverMessage);
        let running = true;
        const sampling = (async () => {
          while (running) {
            await store.sample?.();
            await sleep(200);
          }
        })();
        const results = (await done).filter((m) => m.type === "done");
        running = false;
        await sampling;
        const machineAfter = machineCpu();
        for (const pid of cpuAtStart.keys()) cpuAtEnd.set(pid, cpuSeconds(pid) ?? Number.NaN);
        for (const w of workers) {
          const exited = once(w.child, "exit");
          w.child.send({ type: "close" } satisfies DriverMessage);
          await exited;
        }
        const calls = results.reduce((a, r) => a + r.calls, 0);
        const runs = results.reduce((a, r) => a + r.runs, 0);
        if (runs !== calls) throw new Error(`scale-out: ${calls} fresh calls ran the tool ${runs} times`);
        const seconds = Math.max(...results.map((r) => r.ms)) / 1000;
        const rate = calls / seconds;
        const side = await store.after(before, calls, seconds);
        single ??= rate;
        const busy = (100 * (machineAfter.busy - machine.busy)) / (machineAfter.total - machine.total);
        rows.push([
          store.name,
          String(count),
          rate.toFixed(0),
          (rate / single).toFixed(2),
          previous === undefined ? "" : `${(rate / previous).toFixed(2)}x`,
          `${busy.toFixed(0)}%`,
          load.toFixed(1),
          side.cpu,
          side.counters,
          side.why,
        ]);
        previous = rate;
      }
    }
  } finally {
    for (const store of shared) await store.close();
    await cluster?.stop();
  }
  printTable(
    `scale-out: fresh keyed harness calls from 1, 2 and 4 worker processes (${IN_FLIGHT} in flight each), ${SLICE_MS / 1000} s per row, on one shared store; server CPU in cores (Redis: per node)`,
    [
      "store",
      "workers",
      "calls/s",
      "x 1 worker",
      "per doubling",
      "machine CPU busy",
      "load",
      "server CPU",
      "server counters",
      "why",
    ],
    rows,
  );
}
