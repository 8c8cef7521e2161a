import { Cluster, Redis } from "ioredis";
import pg from "pg";
import { createHarness, defineTool } from "../src/harness/index.js";
import { postgresStore } from "../src/postgres/index.js";
import { redisStore } from "../src/redis/index.js";
import type { Store } from "../src/store/types.js";

/** Where a worker's store is: the shared PostgreSQL (a table), a Redis (a prefix), or a Redis Cluster (seeds, prefix). */
export type Target =
  | { kind: "postgres"; url: string; table: string }
  | { kind: "redis"; url: string; prefix: string }
  | { kind: "cluster"; seeds: { host: string; port: number }[]; prefix: string };

/** The worker's messages: ready (store open, tool warmed), then its count once told to go. */
export type WorkerMessage = { type: "ready" } | { type: "done"; calls: number; ms: number; runs: number };
export type DriverMessage = { type: "go"; ms: number } | { type: "close" };

/**
 * One worker process of the scale-out bench: `scale-out-worker.ts <target JSON> <worker id> <in flight>` opens the store with
 * connections of its own and, told to go, makes fresh keyed harness calls (claim, run, complete) with that many in
 * flight for the given time. The tool counts its own runs: each call ran it once.
 */
const target = JSON.parse(process.argv[2]!) as Target;
const id = process.argv[3]!;
const inFlight = Number(process.argv[4]);
const send = (message: WorkerMessage) => process.send!(message);

let close: () => Promise<void>;
let store: Store;
if (target.kind === "postgres") {
  const pool = new pg.Pool({ connectionString: target.url, max: inFlight });
  store = postgresStore(pool, { table: target.table });
  close = () => pool.end();
} else if (target.kind === "redis") {
  const client = new Redis(target.url);
  store = redisStore(client, { prefix: target.prefix });
  close = async () => void client.disconnect();
} else {
  const client = new Cluster(target.seeds);
  store = redisStore(client, { prefix: target.prefix });
  close = async () => void client.disconnect();
}

let runs = 0;
const tool = defineTool({
  name: "createInvoice",
  effect: "keyed",
  run: async (args: { n: number }) => {
    runs++;
    return { id: `inv_${id}_${args.n}` };
  },
});
const harness = createHarness({ store });
let n = 0;
const call = () => harness.call(`scale-out-${id}`, tool, { n: n++, customer: "cus_91xk2", amount: 1999 });
for (let i = 0; i < 50; i++) await call();
send({ type: "ready" });

process.on("message", async (message: DriverMessage) => {
  if (message.type === "close") {
    await close();
    process.exit(0);
  }
  const before = { runs, n };
  const start = performance.now();
  const end = start + message.ms;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) await call();
    }),
  );
  send({ type: "done", calls: n - before.n, ms: performance.now() - start, runs: runs - before.runs });
});
