import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** Whether nothing listens on the loopback port. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** The lowest port the kernel hands out to outgoing connections (`ip_local_port_range`), 32768 when unreadable. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * `count` free loopback ports, each with its port + `spread` free too (Redis Cluster's bus port), all below the
 * kernel's ephemeral range. A server restarted on its port must find it free: a port from that range, free while
 * the server is down, can meanwhile become the local end of any outgoing connection on the machine (CI saw
 * `pg_ctl start` fail after a restart). Starts from a random base so that parallel runs rarely collide; a
 * collision shows as a server failing to start, not as a wrong test.
 */
export async function freePorts(count: number, spread = 0): Promise<number[]> {
  const low = 10_000;
  const high = ephemeralLow() - 1 - spread;
  if (high - low < count * 4) throw new Error(`no room for ${count} ports below the ephemeral range`);
  const ports: number[] = [];
  let port = low + Math.floor(Math.random() * (high - low));
  for (let tried = 0; ports.length < count; tried++) {
    if (tried > high - low) throw new Error(`found only ${ports.length} of ${count} free ports`);
    port = port >= high ? low : port + 1;
    if ((await isFree(port)) && (spread === 0 || (await isFree(port + spread)))) ports.push(port);
  }
  return ports;
}

/** One free loopback port below the ephemeral range: see `freePorts`. */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port as number;
}
