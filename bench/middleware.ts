import { fileURLToPath } from "node:url";
import { CHARGE_BODY, type LoadLength, loadKeyed } from "./load.js";
import { chargesPath, FRAMEWORKS, REPLAY_PREFIX } from "./middleware-apps.js";
import { benchOwnerEngine } from "./owner-engine.js";
import { type HandlerRuns, type ServerProcess, startServerProcess } from "./server-process.js";
import { availableStores, type StoreName, storeSlug } from "./stores.js";
import { printTable } from "./table.js";

const CONNECTIONS = 10;
/**
 * Every row gets ROUNDS slices of SLICE_S seconds (autocannon counts whole seconds), all rows of a framework taking
 * turns, after WARMUP requests.
 */
const ROUNDS = 3;
const SLICE_S = 1;
const WARMUP = 300;
/** Keys completed before timing, replayed in turn. */
const REPLAY_KEYS = 50;
/** Targets (issue 4): fresh keys at least this fraction of the bare handler on SQLite; replays at least as fast. */
const FRESH_TARGET = 0.7;
/**
 * Targets (issue 15) with the realistic handler (~200 µs of CPU and one SQLite INSERT): fresh keys at least this
 * fraction of the bare handler, per store, and replays at least REAL_REPLAY_TARGET times it.
 */
const REAL_FRESH_TARGETS: Record<StoreName, number> = {
  memory: 0.8,
  "SQLite file": 0.8,
  PostgreSQL: 0.7,
  Redis: 0.7,
  // PostgreSQL's target, for a server store of the same kind; its runs are in BENCHMARKS.md once measured.
  MySQL: 0.7,
};
const REAL_REPLAY_TARGET = 1.3;
const SERVER = fileURLToPath(new URL("./middleware-server.ts", import.meta.url));

/** The owner in its own process, driven over IPC. */
type Server = ServerProcess<HandlerRuns> & { url: string };

async function startServer(framework: string, stores: readonly StoreName[]): Promise<Server> {
  const server = await startServerProcess<HandlerRuns>("middleware server", SERVER, [framework, ...stores], {
    // Plain JavaScript, as users run the built package (see server-process.ts compile).
    compiled: true,
    quietMs: 20,
  });
  return { ...server, url: `http://127.0.0.1:${server.port}` };
}

interface Load {
  ok: number;
  seconds: number;
}

/** Loads one route for `seconds`, or for `amount` requests. */
async function load(url: string, key: () => string, length: LoadLength): Promise<Load> {
  const result = await loadKeyed(url, { connections: CONNECTIONS, key, length, body: CHARGE_BODY });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(
      `middleware bench: ${url} answered ${result.non2xx} non-2xx responses and ${result.errors} errors ` +
        `(${JSON.stringify(result.statusCodeStats)})`,
    );
  }
  return { ok: result["2xx"], seconds: result.duration };
}

/** Completes the replay keys on one route and checks that a retry is answered from the store. */
async function completeReplayKeys(url: string, prefix: string): Promise<void> {
  const post = async (key: string) => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: CHARGE_BODY,
    });
    await response.arrayBuffer();
    return response;
  };
  for (let i = 0; i < REPLAY_KEYS; i++) {
    const response = await post(`${prefix}${i}`);
    if (response.status !== 201) throw new Error(`middleware bench: ${url} answered ${response.status}`);
  }
  const again = await post(`${prefix}0`);
  if (again.headers.get("idempotent-replayed") !== "true") {
    throw new Error(`middleware bench: ${url} did not replay a completed key`);
  }
}

interface Row {
  store: StoreName | undefined;
  kind: "bare handler" | "fresh keys" | "replays";
  /** The realistic handler rather than the trivial one. */
  real: boolean;
  path: string;
  key: () => string;
  total: Load;
}

/**
 * Requests per second through the idemkey middleware of each framework on each store, with a new Idempotency-Key
 * per request (claim, handler, save) and with completed keys (replay, no handler), beside the same handler without
 * the middleware, all on one loopback server per framework; first the engine alone, without HTTP.
 */
export async function benchMiddleware(): Promise<void> {
  // µs/req is 1 / rate: the server's time per request while saturated (autocannon's latencies count whole ms).
  // IDEMKEY_BENCH_STORES="SQLite file,Redis" keeps only the stores named (comma-separated), for a shorter A/B run.
  const named = process.env.IDEMKEY_BENCH_STORES?.split(",").map((name) => name.trim());
  const stores = (await availableStores()).filter((store) => named === undefined || named.includes(store));
  await benchOwnerEngine(stores);
  const table: string[][] = [];
  for (const framework of FRAMEWORKS) {
    const server = await startServer(framework, stores);
    let fresh = 0;
    const newKey = () => `fresh-${fresh++}`;
    const empty = () => ({ ok: 0, seconds: 0 });
    // The bare handler gets a key too, so that autocannon does the same work for every row.
    const rows: Row[] = [];
    // IDEMKEY_BENCH_HANDLERS=trivial leaves the realistic handler's rows out, to compare with a version of the
    // bench that had only the trivial one (they share each store, so their records and load change its rows).
    const handlers = process.env.IDEMKEY_BENCH_HANDLERS === "trivial" ? [false] : [false, true];
    for (const real of handlers) {
      const bare = chargesPath(undefined, real);
      rows.push({ store: undefined, kind: "bare handler", real, path: bare, key: newKey, total: empty() });
      for (const store of stores) {
        const path = chargesPath(storeSlug(store), real);
        const prefix = real ? `real-${REPLAY_PREFIX}` : REPLAY_PREFIX;
        await completeReplayKeys(server.url + path, prefix);
        let replay = 0;
        const replayKey = () => `${prefix}${replay++ % REPLAY_KEYS}`;
        rows.push({ store, kind: "fresh keys", real, path, key: newKey, total: empty() });
        rows.push({ store, kind: "replays", real, path, key: replayKey, total: empty() });
      }
    }
    for (const row of rows) await load(server.url + row.path, row.key, { amount: WARMUP });
    for (let round = 0; round < ROUNDS; round++) {
      for (const row of rows) {
        const before = await server.runs();
        const result = await load(server.url + row.path, row.key, { seconds: SLICE_S });
        const after = await server.runs();
        const ran = after.runs - before.runs;
        // Counted by the handler itself: each answer ran it once (plus requests autocannon cut off), a replay key
        // never. Replays are checked by key: a fresh request cut off in the row before may reach the handler
        // during this one, when a loaded store held it longer than the wait for quiet in runs().
        const honest =
          row.kind === "replays"
            ? after.replayRuns === before.replayRuns
            : ran >= result.ok && ran <= result.ok + CONNECTIONS;
        if (!honest) {
          throw new Error(
            `middleware bench: ${framework} ${row.store} ${row.kind}: ${result.ok} answers, the handler ran ${ran} times (${after.replayRuns - before.replayRuns} under replay keys)`,
          );
        }
        row.total.ok += result.ok;
        row.total.seconds += result.seconds;
      }
    }
    await server.close();
    const rps = (row: Row) => row.total.ok / row.total.seconds;
    for (const row of rows) {
      const bare = rps(rows.find((r) => r.kind === "bare handler" && r.real === row.real)!);
      const ratio = rps(row) / bare;
      const at = (min: number) => `>= ${min}: ${ratio >= min ? "met" : "NOT met"}`;
      let target = "";
      if (row.kind === "replays") target = at(row.real ? REAL_REPLAY_TARGET : 1);
      if (row.kind === "fresh keys" && row.real) target = at(REAL_FRESH_TARGETS[row.store!]);
      if (row.kind === "fresh keys" && !row.real && row.store === "SQLite file") target = at(FRESH_TARGET);
      table.push([
        framework,
        row.real ? "~200 µs + INSERT" : "trivial",
        row.store ?? "-",
        row.kind,
        rps(row).toFixed(0),
        ratio.toFixed(2),
        (1e6 / rps(row)).toFixed(0),
        target,
      ]);
    }
  }
  printTable(
    `idemkey middleware over loopback: requests per second, ${CONNECTIONS} connections, ` +
      `${ROUNDS} × ${SLICE_S} s per row, rows taking turns`,
    ["framework", "handler", "store", "requests", "req/s", "x bare", "µs/req", "target"],
    table,
  );
}
