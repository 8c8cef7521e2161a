import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { killProcess, startProcess, waitFor } from "../test/support/cluster/processes.js";
import { freePorts } from "../test/support/free-port.js";

const run = promisify(execFile);

export interface BenchCluster {
  /** One admin connection per master (the bench's own, never a store's). */
  masters: { port: number; admin: Redis }[];
  seeds: { host: string; port: number }[];
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of the bench's own: three masters, no replicas, no persistence, on free loopback ports, as the
 * cluster tests start theirs (test/support/cluster/redis-cluster.ts, which adds replicas and AOF for failover).
 * `stop()` kills every node and removes its directory.
 */
export async function startBenchCluster(): Promise<BenchCluster> {
  const dir = await mkdtemp(join(tmpdir(), "idemkey-bench-cluster-"));
  const ports = await freePorts(3, 10_000);
  const processes = ports.map((port) =>
    startProcess("redis-server", [
      "--port",
      `${port}`,
      "--bind",
      "127.0.0.1",
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      join(dir, `nodes-${port}.conf`),
      "--dir",
      dir,
      "--save",
      "",
      "--appendonly",
      "no",
    ]),
  );
  const masters = ports.map((port) => ({
    port,
    admin: new Redis({
      host: "127.0.0.1",
      port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    }),
  }));
  for (const m of masters) m.admin.on("error", () => {});
  const stop = async () => {
    for (const m of masters) m.admin.disconnect();
    await Promise.all(processes.map(({ child }) => killProcess(child)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const m of masters) {
      await waitFor(`redis-server on ${m.port}`, async () => {
        if (m.admin.status !== "ready") {
          m.admin.disconnect();
          await m.admin.connect();
        }
        return (await m.admin.ping()) === "PONG" ? true : undefined;
      });
    }
    await run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((p) => `127.0.0.1:${p}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    await waitFor("the cluster to agree", async () => {
      for (const m of masters) {
        const info = String(await m.admin.cluster("INFO"));
        if (!/cluster_state:ok/.test(info) || !/cluster_known_nodes:3/.test(info)) return undefined;
      }
      return true;
    });
  } catch (error) {
    const logs = processes.flatMap(({ log }) => log.slice(-5)).join("\n");
    await stop();
    throw new Error(`starting the bench's Redis Cluster failed: ${(error as Error).message}\n${logs}`, {
      cause: error,
    });
  }
  return { masters, seeds: ports.map((port) => ({ host: "127.0.0.1", port })), stop };
}
