import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreError, StoreLayoutError } from "../../src/errors/index.js";
import { redisStore } from "../../src/redis/index.js";
import { frameworks } from "../owner/apps.js";
import { type ClusterConnection, clusterClients } from "../support/cluster/cluster-clients.js";
import {
  describeReport,
  expectNothingRepeated,
  runFailoverWorkload,
} from "../support/cluster/failover-workload.js";
import { type ClusterNode, type RedisCluster, startRedisCluster } from "../support/cluster/redis-cluster.js";
import { prefixInSlot } from "../support/cluster/slot.js";

const run = promisify(execFile);

/**
 * The store's slot resharded by the real tool, `redis-cli --cluster reshard`, while harness calls and requests
 * through the Express, Hono and Fastify middleware are in flight, for both cluster clients. redis-cli moves the
 * lowest slots of the source first, so the store's prefix is chosen to hash to its master's lowest slot; a few
 * thousand filler keys in that slot, moved one per MIGRATE, keep it half moved long enough for calls to meet
 * TRYAGAIN and ASK (counted from the nodes' own errorstats). Meanwhile `list` and `purge` run in a loop: each either
 * succeeds or says what refused it, never a layout error.
 */
const leaseMs = 5_000;
const runId = randomBytes(4).toString("hex");

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
});

/** How often the nodes refused a command with TRYAGAIN or ASK, from their own INFO errorstats. */
async function refusals(): Promise<number> {
  let total = 0;
  for (const node of cluster.live()) {
    const stats = String(await node.admin.info("errorstats"));
    for (const code of ["TRYAGAIN", "ASK"])
      total += Number(new RegExp(`errorstat_${code}:count=(\\d+)`).exec(stats)?.[1] ?? 0);
  }
  return total;
}

/** A master's lowest slot, as it says itself. */
async function lowestSlot(node: ClusterNode): Promise<number> {
  const line = String(await node.admin.cluster("NODES"))
    .split("\n")
    .find((l) => l.includes("myself"))!;
  const ranges = line
    .split(" ")
    .slice(8)
    .filter((r) => !r.startsWith("["));
  return Math.min(...ranges.map((r) => Number(r.split("-")[0])));
}

for (const [name, connect] of Object.entries(clusterClients)) {
  describe(`Redis Cluster reshard by redis-cli, ${name}`, () => {
    let connection: ClusterConnection | undefined;
    afterAll(async () => {
      await connection?.close();
    });

    it("calls and requests in flight wait out TRYAGAIN and ASK; nothing runs twice; list and purge say what refused them", async () => {
      connection = await connect(cluster);
      const source = await cluster.masterOf(0);
      const slot = await lowestSlot(source);
      const to = await cluster.otherMaster(source);
      const prefix = prefixInSlot(`idemkey-${runId}-${name.split(" ")[0]}`, slot);
      expect(await cluster.slotOf(prefix)).toBe(slot);
      const filler = Array.from({ length: 3_000 }, (_, i) => [`${prefix}filler:${i}`, "x"]).flat();
      await source.admin.mset(...filler);
      const store = redisStore(connection.client, { prefix, refusedRetryMs: 15_000 });

      const listing: { ok: number; errors: unknown[] } = { ok: 0, errors: [] };
      let resharding = false;
      const listLoop = async () => {
        while (resharding) {
          for (const op of [() => store.list({ limit: 100 }), () => store.purge()]) {
            await op().then(
              () => listing.ok++,
              (error: unknown) => listing.errors.push(error),
            );
          }
        }
      };
      const refusedBefore = await refusals();
      let reshardMs = 0;
      let loop: Promise<void> | undefined;
      const report = await runFailoverWorkload({
        store,
        leaseMs,
        frameworks,
        fault: async () => {
          resharding = true;
          loop = listLoop();
          const started = Date.now();
          try {
            await run("redis-cli", [
              "--cluster",
              "reshard",
              `127.0.0.1:${source.port}`,
              "--cluster-from",
              source.id,
              "--cluster-to",
              to.id,
              "--cluster-slots",
              "1",
              "--cluster-yes",
              "--cluster-pipeline",
              "1",
            ]);
          } finally {
            reshardMs = Date.now() - started;
            resharding = false;
            await loop;
          }
        },
      });
      const refused = (await refusals()) - refusedBefore;
      console.log(
        `${name}: redis-cli moved slot ${slot} from ${source.port} to ${to.port} in ${reshardMs} ms; ${refused} ` +
          `TRYAGAIN/ASK refusals; list/purge ${listing.ok} ok, ${listing.errors.length} failed; ${describeReport(report)}`,
      );
      expect((await cluster.masterOf(slot)).port).toBe(to.port);
      expect(refused, "calls met the half-moved slot").toBeGreaterThan(0);
      for (const error of listing.errors) {
        expect(error).not.toBeInstanceOf(StoreLayoutError);
        expect(error).toBeInstanceOf(StoreError);
        expect((error as Error).message).toMatch(/TRYAGAIN|ASK|MOVED|non local key|redirection/);
      }
      expect(listing.ok).toBeGreaterThan(0);
      expectNothingRepeated(report);
    }, 300_000);
  });
}
