import { Cluster } from "ioredis";
import { createCluster } from "redis";
import type { RedisClientLike } from "../../../src/redis/index.js";
import type { RedisCluster } from "./redis-cluster.js";

/** A cluster client of the store's, and how to close it. */
export interface ClusterConnection {
  client: RedisClientLike;
  close(): unknown;
}

/** Both clients' cluster modes, each seeded with every node of `cluster`; their reconnect errors are the point. */
export const clusterClients: Record<string, (cluster: RedisCluster) => Promise<ClusterConnection>> = {
  "ioredis Cluster": async (cluster) => {
    const client = new Cluster(cluster.seeds);
    client.on("error", () => {});
    return { client, close: () => client.disconnect() };
  },
  "node-redis createCluster": async (cluster) => {
    const client = createCluster({
      rootNodes: cluster.seeds.map((s) => ({ url: `redis://${s.host}:${s.port}` })),
    });
    client.on("error", () => {});
    await client.connect();
    return { client: client as unknown as RedisClientLike, close: () => client.close() };
  },
};
