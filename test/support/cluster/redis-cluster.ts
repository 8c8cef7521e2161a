import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { freePorts } from "../free-port.js";
import { killProcess, startProcess, waitFor } from "./processes.js";

const run = promisify(execFile);

export interface ClusterNode {
  port: number;
  id: string;
  /** The test's own connection to this node (never the store's). */
  admin: Redis;
  alive: boolean;
}

export interface RedisCluster {
  /** Every node started, dead ones included; `live()` the ones still running. */
  nodes: ClusterNode[];
  live(): ClusterNode[];
  /** `host:port` seeds for a cluster client. */
  seeds: { host: string; port: number }[];
  slotOf(key: string): Promise<number>;
  /** The node serving the slot as master, as the live nodes agree. */
  masterOf(slot: number): Promise<ClusterNode>;
  /** A master other than `not`. */
  otherMaster(not: ClusterNode): Promise<ClusterNode>;
  /** SIGKILLs a node, as a machine lost would. */
  kill(node: ClusterNode): Promise<void>;
  /**
   * Holds a master's writes (CLIENT PAUSE WRITE: commands wait unexecuted, unanswered) until its replicas have
   * every write it acknowledged, then SIGKILLs it: a failover that loses no acknowledged write, as a replica kept
   * in step (`WAIT`, `min-replicas-max-lag`) gives.
   */
  killCaughtUp(node: ClusterNode): Promise<void>;
  /** Waits until a live replica serves the slot as master and every live node says the cluster is ok. */
  awaitFailover(slot: number, from: ClusterNode): Promise<ClusterNode>;
  /**
   * Moves a slot to another master the way `redis-cli --cluster reshard` does (IMPORTING/MIGRATING, MIGRATE in
   * batches, SETSLOT NODE), calling `during` after the first batch while the slot is half moved.
   */
  migrate(slot: number, to: ClusterNode, during?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

/** What differs between the clusters started: the cluster tests' failover, or the bench's masters alone. */
export interface ClusterOptions {
  /**
   * Replicas per master (there are three masters). With replicas, `cluster-node-timeout` is 2 s so that a failover
   * takes seconds, not the default 15, and `startRedisCluster` waits until every replica has synced.
   * @default 1
   */
  replicas?: number;
  /** AOF on, each node with files of its own; off, a node keeps nothing on disk. @default true */
  aof?: boolean;
}

const MASTERS = 3;

/**
 * Starts a Redis Cluster of its own on free loopback ports: by default three masters and three replicas
 * (`redis-cli --cluster create ... --cluster-replicas 1`), AOF on, `cluster-node-timeout` 2 s so that a failover
 * takes seconds, not the default 15; the scale-out bench starts three masters alone, nothing on disk. `stop()`
 * kills every node and removes the directory; call it in `afterAll`.
 */
export async function startRedisCluster(options: ClusterOptions = {}): Promise<RedisCluster> {
  const { replicas = 1, aof = true } = options;
  const dir = await mkdtemp(join(tmpdir(), "idemkey-cluster-"));
  const ports = await freePorts(MASTERS * (1 + replicas), 10_000);
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
      ...(replicas > 0 ? ["--cluster-node-timeout", "2000"] : []),
      "--dir",
      dir,
      ...(aof
        ? [
            "--dbfilename",
            `dump-${port}.rdb`,
            "--appendonly",
            "yes",
            "--appendfilename",
            `aof-${port}.aof`,
            "--appenddirname",
            `aof-${port}`,
          ]
        : ["--appendonly", "no"]),
      "--save",
      "",
    ]),
  );
  const nodes: ClusterNode[] = ports.map((port) => ({
    port,
    id: "",
    admin: new Redis({
      host: "127.0.0.1",
      port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    }),
    alive: true,
  }));
  const stop = async () => {
    for (const node of nodes) node.admin.disconnect();
    await Promise.all(processes.map(({ child }) => killProcess(child)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const node of nodes) {
      await waitFor(`redis-server on ${node.port}`, async () => {
        if (node.admin.status !== "ready") {
          node.admin.disconnect();
          node.admin = new Redis({
            host: "127.0.0.1",
            port: node.port,
            maxRetriesPerRequest: 0,
            retryStrategy: () => null,
            lazyConnect: true,
          });
          node.admin.on("error", () => {});
          await node.admin.connect();
        }
        return (await node.admin.ping()) === "PONG" ? true : undefined;
      });
      node.id = String(await node.admin.cluster("MYID"));
    }
    await run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((p) => `127.0.0.1:${p}`),
      "--cluster-replicas",
      `${replicas}`,
      "--cluster-yes",
    ]);
    await waitFor("the new cluster to agree", async () => {
      for (const node of nodes) {
        const info = String(await node.admin.cluster("INFO"));
        const known = info.includes(`cluster_known_nodes:${ports.length}`);
        if (!/cluster_state:ok/.test(info) || !known) return undefined;
        // A replica that has not synced with its master yet would refuse to take over (its data is too old).
        const replication = String(await node.admin.info("replication"));
        if (/role:slave/.test(replication) && !/master_link_status:up/.test(replication)) return undefined;
      }
      return true;
    });
  } catch (error) {
    const logs = processes.flatMap(({ log }) => log.slice(-5)).join("\n");
    await stop();
    throw new Error(`starting a Redis Cluster failed: ${(error as Error).message}\n${logs}`, {
      cause: error,
    });
  }

  const live = () => nodes.filter((n) => n.alive);
  const byId = (id: string) => nodes.find((n) => n.id === id);

  /** The slot's master as one live node's CLUSTER NODES says. */
  async function masterSeenBy(node: ClusterNode, slot: number): Promise<ClusterNode | undefined> {
    const lines = String(await node.admin.cluster("NODES"))
      .trim()
      .split("\n");
    for (const line of lines) {
      const [id, , flags, , , , , state, ...ranges] = line.split(" ");
      if (!flags!.includes("master") || flags!.includes("fail") || state !== "connected") continue;
      for (const range of ranges) {
        if (range.startsWith("[")) continue;
        const [from, to = from] = range.split("-").map(Number);
        if (slot >= from! && slot <= to!) return byId(id!);
      }
    }
    return undefined;
  }

  async function agreedMaster(slot: number): Promise<ClusterNode | undefined> {
    const seen = await Promise.all(live().map((n) => masterSeenBy(n, slot)));
    const first = seen[0];
    return first?.alive && seen.every((s) => s === first) ? first : undefined;
  }

  return {
    nodes,
    live,
    seeds: ports.map((port) => ({ host: "127.0.0.1", port })),
    slotOf: async (key) => Number(await live()[0]!.admin.cluster("KEYSLOT", key)),
    masterOf: (slot) => waitFor(`a master for slot ${slot}`, () => agreedMaster(slot)),
    async otherMaster(not) {
      for (const node of live()) {
        if (node === not) continue;
        const role = (await node.admin.role()) as unknown[];
        if (role[0] === "master") return node;
      }
      throw new Error("no other live master");
    },
    async kill(node) {
      node.alive = false;
      node.admin.disconnect();
      await killProcess(processes[nodes.indexOf(node)]!.child);
    },
    async killCaughtUp(node) {
      await node.admin.client("PAUSE", 60_000, "WRITE");
      await waitFor(`the replicas of ${node.port} to catch up`, async () => {
        const info = String(await node.admin.info("replication"));
        const offset = /master_repl_offset:(\d+)/.exec(info)?.[1];
        const replicas = [...info.matchAll(/slave\d+:.*offset=(\d+)/g)].map((m) => m[1]);
        return replicas.length > 0 && replicas.every((r) => r === offset) ? true : undefined;
      });
      node.alive = false;
      node.admin.disconnect();
      await killProcess(processes[nodes.indexOf(node)]!.child);
    },
    async awaitFailover(slot, from) {
      const promoted = await waitFor(`a replica of ${from.port} to take over slot ${slot}`, async () => {
        const master = await agreedMaster(slot);
        return master && master !== from ? master : undefined;
      });
      await waitFor("the cluster to be ok again", async () => {
        for (const node of live()) {
          if (!/cluster_state:ok/.test(String(await node.admin.cluster("INFO")))) return undefined;
        }
        return true;
      });
      return promoted;
    },
    async migrate(slot, to, during) {
      const from = await agreedMaster(slot);
      if (!from) throw new Error(`slot ${slot} has no agreed master`);
      await to.admin.cluster("SETSLOT", slot, "IMPORTING", from.id);
      await from.admin.cluster("SETSLOT", slot, "MIGRATING", to.id);
      let first = true;
      for (;;) {
        const keys = (await from.admin.cluster("GETKEYSINSLOT", slot, 1)) as string[];
        if (keys.length === 0) break;
        await from.admin.migrate("127.0.0.1", to.port, "", 0, 10_000, "REPLACE", "KEYS", ...keys);
        if (first && during) await during();
        first = false;
      }
      if (first && during) await during();
      for (const node of [to, from, ...live().filter((n) => n !== to && n !== from)]) {
        const role = (await node.admin.role()) as unknown[];
        if (role[0] === "master") await node.admin.cluster("SETSLOT", slot, "NODE", to.id);
      }
      await waitFor(`every node to see slot ${slot} on ${to.port}`, async () =>
        (await agreedMaster(slot)) === to ? true : undefined,
      );
    },
    stop,
  };
}
