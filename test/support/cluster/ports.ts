import { createServer } from "node:net";

/** Whether nothing listens on the loopback port (a cluster node also needs its bus port, the port + 10000). */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * `count` free loopback ports, each with its port + `spread` free too (Redis Cluster's bus port). Starts from a
 * random base so that parallel runs rarely collide; a collision shows as a server failing to start, not a wrong test.
 */
export async function freePorts(count: number, spread = 0): Promise<number[]> {
  const ports: number[] = [];
  let port = 20_000 + Math.floor(Math.random() * 20_000);
  while (ports.length < count) {
    port += 1;
    if (port > 55_000 - spread) port = 20_000;
    if ((await isFree(port)) && (spread === 0 || (await isFree(port + spread)))) ports.push(port);
  }
  return ports;
}
