import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { CHARGE_BODY, type LoadLength, loadKeyed } from "./load.js";
import { DUPLICATE_MARK, PEER_PATH, PEERS, type PeerRuns, REPLAY_MARK } from "./peers-apps.js";
import { type ServerProcess, startServerProcess } from "./server-process.js";
import { connectRedis, deleteKeys } from "./services.js";
import { RUN_ID } from "./stores.js";
import { printTable } from "./table.js";

const CONCURRENCY = [1, 16, 64] as const;
/** Every row gets ROUNDS slices of SLICE_S seconds, all rows taking turns, after WARMUP requests. */
const QUICK = process.env.IDEMKEY_BENCH_QUICK === "1";
const ROUNDS = QUICK ? 1 : 2;
const SLICE_S = QUICK ? 1 : 2;
const WARMUP = 200;
const REPLAY_KEYS = 50;
/** Concurrent requests with one key, BURSTS times per contender, sent while fresh keys load the same server. */
const DUPLICATES = 32;
const BURSTS = 3;
/** Targets (issue 32): idemkey's req/s at least the best non-duplicating peer's, its p99 within this of it. */
const P99_TARGET = 1.2;
/** Every key any contender writes starts with this (the hash tag keeps a Redis Cluster client on one slot). */
const PREFIX = `{idemkey-bench-peers-${RUN_ID}}:`;
const SERVER = fileURLToPath(new URL("./peers-server.ts", import.meta.url));

type PeerServer = ServerProcess<PeerRuns> & { url: string };

async function startServer(name: string): Promise<PeerServer> {
  // IDEMKEY_BENCH_PROFILE=<dir> writes each server's CPU profile under <dir>/<peer>/ when it exits: where a
  // contender's time per request goes (BENCHMARKS.md's reason for the peers' ratios came from one).
  const profile = process.env.IDEMKEY_BENCH_PROFILE;
  const execArgv = profile
    ? [...process.execArgv, "--cpu-prof", `--cpu-prof-dir=${join(profile, name)}`]
    : process.execArgv;
  const server = await startServerProcess<PeerRuns>(`peers server ${name}`, SERVER, [name, PREFIX], {
    execArgv,
    quietMs: 50,
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

interface Row {
  peer: string;
  kind: "fresh" | "replay";
  connections: number;
  ok: number;
  seconds: number;
  latencies: number[];
}

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
  const names = Object.keys(PEERS).filter((name) => redis !== undefined || PEERS[name]!.store !== "Redis");
  const servers = new Map<string, PeerServer>();
  try {
    for (const name of names) servers.set(name, await startServer(name));

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
          rows.push({ peer: name, kind, connections, ok: 0, seconds: 0, latencies: [] });
        }
      }
    }
    for (const name of names) {
      const server = servers.get(name)!;
      await load(server.url, 16, freshKey, { amount: WARMUP });
      if (name !== "bare") await load(server.url, 16, replayKey, { amount: WARMUP });
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const row of rows) {
        const server = servers.get(row.peer)!;
        const before = await server.runs();
        const slice = await load(server.url, row.connections, row.kind === "fresh" ? freshKey : replayKey, {
          seconds: SLICE_S,
        });
        const after = await server.runs();
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
        row.ok += slice.ok;
        row.seconds += slice.seconds;
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
      return { rps: row.ok / row.seconds, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
    };
    printTable(
      `peers over loopback, Express 5, handler ~200 µs CPU + ~1 ms async write: ${ROUNDS} × ${SLICE_S} s per row, rows taking turns; latency in ms`,
      ["library", "store", "conns", "keys", "req/s", "p50", "p99"],
      rows.map((row) => {
        const s = stats(row);
        const peer = PEERS[row.peer]!;
        return [
          peer.library,
          peer.store,
          String(row.connections),
          row.kind,
          s.rps.toFixed(0),
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

    // idemkey / the best peer on the same store that ran no duplicate, per concurrency and kind.
    const ratios: string[][] = [];
    for (const store of ["memory", "Redis"] as const) {
      for (const connections of CONCURRENCY) {
        for (const kind of ["fresh", "replay"] as const) {
          const at = (name: string) =>
            rows.find((r) => r.peer === name && r.kind === kind && r.connections === connections);
          const ours = names.find((n) => PEERS[n]!.library === "idemkey" && PEERS[n]!.store === store);
          if (ours === undefined) continue;
          const rivals = names
            .filter((n) => PEERS[n]!.store === store && PEERS[n]!.library !== "idemkey")
            .filter((n) => duplicates.get(n)?.most === 1)
            .map((n) => ({ name: n, ...stats(at(n)!) }));
          const mine = stats(at(ours)!);
          if (rivals.length === 0) {
            ratios.push([store, String(connections), kind, "no peer runs no duplicate", "", "", ""]);
            continue;
          }
          const best = rivals.reduce((a, b) => (b.rps > a.rps ? b : a));
          const rps = mine.rps / best.rps;
          const p99 = mine.p99 / best.p99;
          ratios.push([
            store,
            String(connections),
            kind,
            PEERS[best.name]!.library,
            rps.toFixed(2),
            p99.toFixed(2),
            rps >= 1 && p99 <= P99_TARGET ? "met" : "NOT met",
          ]);
        }
      }
    }
    printTable(
      `idemkey / the fastest peer on the same store that ran no duplicate; target req/s >= 1.00, p99 <= ${P99_TARGET}`,
      ["store", "conns", "keys", "best peer", "req/s ratio", "p99 ratio", "target"],
      ratios,
    );
  } finally {
    await Promise.all([...servers.values()].map((server) => server.close()));
    if (redis !== undefined) {
      await deleteKeys(redis, PREFIX);
      redis.disconnect();
    }
  }
}
