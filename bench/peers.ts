import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { bundleBefore } from "./before.js";
import { CHARGE_BODY, type LoadLength, loadKeyed } from "./load.js";
import { DUPLICATE_MARK, PEER_PATH, PEERS, type PeerRuns, REPLAY_MARK } from "./peers-apps.js";
import { median, spread } from "./rounds.js";
import { type ServerProcess, startServerProcess } from "./server-process.js";
import { connectRedis, deleteKeys, redisCpuUs } from "./services.js";
import { RUN_ID } from "./stores.js";
import { printTable } from "./table.js";

/** IDEMKEY_BENCH_CONNS=16,64 and IDEMKEY_BENCH_PEERS=bare,idemkey-redis,... narrow a run (for profiling). */
const CONCURRENCY = (process.env.IDEMKEY_BENCH_CONNS?.split(",").map(Number) ?? [
  1, 16, 64,
]) as readonly number[];
const ONLY = process.env.IDEMKEY_BENCH_PEERS?.split(",");
/** IDEMKEY_BENCH_KINDS=fresh (or replay) times one kind of keys only, so that a profile holds one path. */
const KINDS = process.env.IDEMKEY_BENCH_KINDS?.split(",");
/**
 * Every row gets ROUNDS slices of SLICE_S seconds after WARMUP requests, all rows taking turns, in the opposite order
 * on every other round (A B C, C B A, ...), so that load drifting over a round lands on every row alike.
 */
const QUICK = process.env.IDEMKEY_BENCH_QUICK === "1";
const ROUNDS = Number(process.env.IDEMKEY_BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const SLICE_S = QUICK ? 1 : 2;
const WARMUP = 200;
const REPLAY_KEYS = 50;
/** Concurrent requests with one key, BURSTS times per contender, sent while fresh keys load the same server. */
const DUPLICATES = 32;
const BURSTS = 3;
/**
 * Targets (issue 44), against the peer that runs no duplicate and spends the least machine CPU per request on the
 * same store: CPU per request at most CPU_TARGET times its own (memory 1.0, Redis 1.1), req/s at least RPS_TARGET
 * times (memory 1.0; Redis 0.95 of `@node-idempotency/core`, 1.0 of Powertools), p99 within P99_TARGET.
 */
const CPU_TARGET = { memory: 1.0, Redis: 1.1 } as const;
const P99_TARGET = 1.2;
/** Every key any contender writes starts with this (the hash tag keeps a Redis Cluster client on one slot). */
const PREFIX = `{idemkey-bench-peers-${RUN_ID}}:`;
const SERVER = fileURLToPath(new URL("./peers-server.ts", import.meta.url));

type PeerServer = ServerProcess<PeerRuns> & { url: string };

async function startServer(
  name: string,
  redisUrl: string | undefined,
  before: string | undefined,
): Promise<PeerServer> {
  // IDEMKEY_BENCH_PROFILE=<dir> writes each server's CPU profile under <dir>/<peer>/ when it exits: where a
  // contender's time per request goes (BENCHMARKS.md's reason for the peers' ratios came from one).
  const profile = process.env.IDEMKEY_BENCH_PROFILE;
  const execArgv = profile ? ["--cpu-prof", `--cpu-prof-dir=${join(profile, name)}`] : [];
  const server = await startServerProcess<PeerRuns>(`peers server ${name}`, SERVER, [name, PREFIX], {
    execArgv,
    compiled: true,
    quietMs: 50,
    env: {
      ...(redisUrl === undefined ? {} : { IDEMKEY_REDIS_URL: redisUrl }),
      ...(before === undefined ? {} : { IDEMKEY_BENCH_BEFORE_MODULE: before }),
    },
  });
  return { ...server, url: `http://127.0.0.1:${server.port}${PEER_PATH}` };
}

interface Slice {
  ok: number;
  non2xx: number;
  seconds: number;
  /** Each 2xx answer's latency in ms, as autocannon measured it (its own histogram keeps whole ms only). */
  latencies: number[];
  statuses: Record<string, number>;
}

async function load(url: string, connections: number, key: () => string, length: LoadLength): Promise<Slice> {
  const latencies: number[] = [];
  const result = await loadKeyed(url, {
    connections,
    key,
    length,
    body: CHARGE_BODY,
    onResponse: (status, ms) => {
      if (status >= 200 && status < 300) latencies.push(ms);
    },
  });
  if (result.errors > 0) throw new Error(`peers bench: ${url}: ${result.errors} errors`);
  const statuses: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = stat?.count ?? 0;
  return { ok: result["2xx"], non2xx: result.non2xx, seconds: result.duration, latencies, statuses };
}

/** One row's slice of one round: answers, time, and the CPU the server process and Redis spent on them (µs). */
interface Round {
  ok: number;
  seconds: number;
  nodeUs: number;
  redisUs: number;
}

interface Row {
  peer: string;
  kind: "fresh" | "replay";
  connections: number;
  rounds: Round[];
  latencies: number[];
}

const rpsOf = (r: Round) => r.ok / r.seconds;
const cpuOf = (r: Round) => (r.nodeUs + r.redisUs) / r.ok;

const quantile = (sorted: Float64Array, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/**
 * The owner's half against what a user would otherwise install (issue 32): the same Express app and handler behind
 * idemkey's middleware and behind each peer library, each server in a process of its own, loaded by autocannon at 1,
 * 16 and 64 connections with fresh keys and with replays of completed keys; then, while fresh keys load each server,
 * bursts of concurrent duplicates of one key, whose handler runs the handler itself counts.
 */
export async function benchPeers(): Promise<void> {
  const redis = await connectRedis();
  const before = await bundleBefore();
  const names = Object.keys(PEERS)
    .filter((name) => redis !== undefined || PEERS[name]!.store !== "Redis")
    .filter((name) => before !== undefined || PEERS[name]!.library !== "idemkey before")
    .filter((name) => ONLY === undefined || ONLY.includes(name));
  const servers = new Map<string, PeerServer>();
  try {
    for (const name of names)
      servers.set(name, await startServer(name, process.env.IDEMKEY_REDIS_URL, before));

    // Replay keys completed one by one, each checked to have run the handler once.
    for (const [name, server] of servers) {
      if (name === "bare") continue;
      for (let i = 0; i < REPLAY_KEYS; i++) {
        const response = await fetch(server.url, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": `${PREFIX}${REPLAY_MARK}${i}` },
          body: CHARGE_BODY,
        });
        await response.arrayBuffer();
        if (response.status !== 201) throw new Error(`peers bench: ${name} answered ${response.status}`);
      }
      const { replayRuns } = await server.runs();
      if (replayRuns !== REPLAY_KEYS) throw new Error(`peers bench: ${name} ran ${replayRuns} replay keys`);
    }

    let fresh = 0;
    const freshKey = () => `${PREFIX}fresh-${fresh++}`;
    let replay = 0;
    const replayKey = () => `${PREFIX}${REPLAY_MARK}${replay++ % REPLAY_KEYS}`;
    const rows: Row[] = [];
    for (const connections of CONCURRENCY) {
      for (const name of names) {
        for (const kind of name === "bare" ? (["fresh"] as const) : (["fresh", "replay"] as const)) {
          if (KINDS === undefined || KINDS.includes(kind))
            rows.push({ peer: name, kind, connections, rounds: [], latencies: [] });
        }
      }
    }
    for (const name of names) {
      const server = servers.get(name)!;
      await load(server.url, 16, freshKey, { amount: WARMUP });
      if (name !== "bare") await load(server.url, 16, replayKey, { amount: WARMUP });
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const row of round % 2 === 0 ? rows : [...rows].reverse()) {
        const server = servers.get(row.peer)!;
        // Redis's own CPU counts for the rows on Redis: the server is the bench's own when it started one.
        const onRedis = PEERS[row.peer]!.store === "Redis" && redis !== undefined;
        const redisBefore = onRedis ? await redisCpuUs(redis) : 0;
        const before = await server.runs();
        const slice = await load(server.url, row.connections, row.kind === "fresh" ? freshKey : replayKey, {
          seconds: SLICE_S,
        });
        const after = await server.runs();
        const redisAfter = onRedis ? await redisCpuUs(redis) : 0;
        if (slice.non2xx > 0) {
          throw new Error(`peers bench: ${row.peer} ${row.kind}: non-2xx ${JSON.stringify(slice.statuses)}`);
        }
        // Counted by the handler: a fresh answer ran it once (plus requests cut off at the end), a replay never.
        const ran = after.runs - before.runs;
        const honest =
          row.kind === "replay"
            ? after.replayRuns === before.replayRuns
            : ran >= slice.ok && ran <= slice.ok + row.connections;
        if (!honest) {
          throw new Error(
            `peers bench: ${row.peer} ${row.kind}: ${slice.ok} answers, the handler ran ${ran} times`,
          );
        }
        row.rounds.push({
          ok: slice.ok,
          seconds: slice.seconds,
          nodeUs: after.cpuUs - before.cpuUs,
          redisUs: redisAfter - redisBefore,
        });
        row.latencies.push(...slice.latencies);
      }
    }

    // Duplicates: BURSTS bursts of DUPLICATES concurrent requests, one key each, under 16 connections of fresh keys.
    const duplicates = new Map<string, { most: number; total: number; statuses: Record<string, number> }>();
    for (const name of names) {
      if (name === "bare") continue;
      const server = servers.get(name)!;
      const statuses: Record<string, number> = {};
      const keys = Array.from({ length: BURSTS }, (_, i) => `${PREFIX}${DUPLICATE_MARK}${name}-${i}`);
      const background = load(server.url, 16, freshKey, { seconds: SLICE_S });
      await sleep(300);
      for (const key of keys) {
        const burst = await load(server.url, DUPLICATES, () => key, { amount: DUPLICATES });
        for (const [code, count] of Object.entries(burst.statuses))
          statuses[code] = (statuses[code] ?? 0) + count;
      }
      await background;
      const { byKey } = await server.runs();
      const counts = keys.map((key) => byKey[key] ?? 0);
      duplicates.set(name, { most: Math.max(...counts), total: counts.reduce((a, b) => a + b, 0), statuses });
    }

    const stats = (row: Row) => {
      const sorted = Float64Array.from(row.latencies).sort();
      return {
        rps: median(row.rounds.map(rpsOf)),
        cpu: median(row.rounds.map(cpuOf)),
        p50: quantile(sorted, 0.5),
        p99: quantile(sorted, 0.99),
      };
    };
    const at = (name: string, kind: "fresh" | "replay", connections: number) =>
      rows.find((r) => r.peer === name && r.kind === kind && r.connections === connections);
    printTable(
      `peers over loopback, Express 5, handler ${process.env.IDEMKEY_BENCH_ITERATIONS} PBKDF2 iterations (~200 µs CPU, the same for every contender) + ~1 ms async write: ${ROUNDS} × ${SLICE_S} s per row, rows taking turns in alternating order; CPU per request = the server process's CPU (process.cpuUsage) + redis-server's (INFO cpu) over answers, median (min-max) of the rounds; latency in ms`,
      [
        "library",
        "store",
        "conns",
        "keys",
        "req/s",
        "CPU µs/req",
        "of which Redis",
        "over bare",
        "p50",
        "p99",
      ],
      rows.map((row) => {
        const s = stats(row);
        const peer = PEERS[row.peer]!;
        const bare = at("bare", "fresh", row.connections);
        return [
          peer.library,
          peer.store,
          String(row.connections),
          row.kind,
          spread(row.rounds.map(rpsOf), 0),
          spread(row.rounds.map(cpuOf), 0),
          peer.store === "Redis" ? median(row.rounds.map((r) => r.redisUs / r.ok)).toFixed(0) : "",
          bare && row.peer !== "bare" ? (s.cpu - stats(bare).cpu).toFixed(0) : "",
          s.p50.toFixed(2),
          s.p99.toFixed(2),
        ];
      }),
    );
    printTable(
      `${BURSTS} bursts of ${DUPLICATES} concurrent requests with one key each, under 16 connections of fresh keys: handler runs per key (counted by the handler)`,
      ["library", "store", "most runs for one key", "runs, all bursts", "answers", "verdict"],
      [...duplicates].map(([name, d]) => [
        PEERS[name]!.library,
        PEERS[name]!.store,
        String(d.most),
        `${d.total} / ${BURSTS}`,
        Object.entries(d.statuses)
          .map(([code, count]) => `${code}×${count}`)
          .join(" "),
        d.most === 1 ? "once" : "RUNS DUPLICATES",
      ]),
    );

    // idemkey / each peer on the same store that ran no duplicate, paired round by round (the rounds ran side by
    // side, so a ratio of one round's figures cancels the load both met); the target is against the peer with the
    // least CPU per request, and for req/s on Redis against each (0.95 of @node-idempotency/core, 1.0 of Powertools).
    const ratios: string[][] = [];
    for (const store of ["memory", "Redis"] as const) {
      for (const ours of names.filter(
        (n) => PEERS[n]!.library.startsWith("idemkey") && PEERS[n]!.store === store,
      )) {
        const rivals = names
          .filter((n) => PEERS[n]!.store === store && !PEERS[n]!.library.startsWith("idemkey"))
          .filter((n) => duplicates.get(n)?.most === 1);
        for (const connections of CONCURRENCY) {
          for (const kind of ["fresh", "replay"] as const) {
            const mine = at(ours, kind, connections);
            if (mine === undefined) continue;
            if (rivals.length === 0) {
              ratios.push([store, String(connections), kind, "no peer runs no duplicate", "", "", "", ""]);
              continue;
            }
            const best = rivals.reduce((a, b) =>
              stats(at(b, kind, connections)!).cpu < stats(at(a, kind, connections)!).cpu ? b : a,
            );
            for (const rival of rivals) {
              const theirs = at(rival, kind, connections)!;
              const paired = (f: (r: Round) => number) =>
                mine.rounds.map((r, i) => f(r) / f(theirs.rounds[i]!));
              const cpu = paired(cpuOf);
              const rps = paired(rpsOf);
              const p99 = stats(mine).p99 / stats(theirs).p99;
              const rpsTarget =
                store === "Redis" && PEERS[rival]!.library === "@node-idempotency/core" ? 0.95 : 1.0;
              const cpuMet = rival !== best || median(cpu) <= CPU_TARGET[store];
              const met = cpuMet && median(rps) >= rpsTarget && p99 <= P99_TARGET;
              ratios.push([
                `${store}${PEERS[ours]!.library === "idemkey" ? "" : ` (${PEERS[ours]!.library})`}`,
                String(connections),
                kind,
                `${PEERS[rival]!.library}${rival === best ? " (least CPU)" : ""}`,
                spread(cpu, 2),
                spread(rps, 2),
                p99.toFixed(2),
                met ? "met" : "NOT met",
              ]);
            }
          }
        }
      }
    }
    printTable(
      `idemkey / each peer on the same store that ran no duplicate, paired by round, median (min-max); targets: CPU per request <= ${CPU_TARGET.memory} (memory) / ${CPU_TARGET.Redis} (Redis) of the least-CPU peer, req/s >= 1.00 (0.95 of @node-idempotency/core on Redis), p99 <= ${P99_TARGET}`,
      ["store", "conns", "keys", "peer", "CPU/req ratio", "req/s ratio", "p99 ratio", "target"],
      ratios,
    );
    if (before !== undefined) {
      const changes: string[][] = [];
      for (const store of ["memory", "Redis"] as const) {
        const now = names.find((n) => PEERS[n]!.library === "idemkey" && PEERS[n]!.store === store);
        const then = names.find((n) => PEERS[n]!.library === "idemkey before" && PEERS[n]!.store === store);
        if (now === undefined || then === undefined) continue;
        for (const connections of CONCURRENCY) {
          for (const kind of ["fresh", "replay"] as const) {
            const a = at(now, kind, connections);
            const b = at(then, kind, connections);
            if (a === undefined || b === undefined) continue;
            const paired = (f: (r: Round) => number) => a.rounds.map((r, i) => f(r) / f(b.rounds[i]!));
            const saved = a.rounds.map((r, i) => cpuOf(b.rounds[i]!) - cpuOf(r));
            changes.push([
              store,
              String(connections),
              kind,
              spread(paired(cpuOf), 2),
              spread(saved, 0),
              spread(paired(rpsOf), 2),
            ]);
          }
        }
      }
      printTable(
        `idemkey now / idemkey before (${process.env.IDEMKEY_BENCH_BEFORE}), paired by round, median (min-max)`,
        ["store", "conns", "keys", "CPU/req ratio", "CPU µs/req saved", "req/s ratio"],
        changes,
      );
    }
  } finally {
    await Promise.all([...servers.values()].map((server) => server.close()));
    if (redis !== undefined) {
      await deleteKeys(redis, PREFIX);
      redis.disconnect();
    }
  }
}
