import { once } from "node:events";
import { createConnection, createServer, type Socket } from "node:net";

export interface SwitchProxy {
  port: number;
  /** Sends new connections to `port` and cuts the ones open now, as a DNS or VIP failover would. */
  switchTo(port: number): void;
  close(): Promise<void>;
}

/** A loopback TCP proxy in front of a server, to be switched to its promoted standby. */
export async function startSwitchProxy(target: number): Promise<SwitchProxy> {
  let current = target;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host: "127.0.0.1", port: current });
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        open.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  return {
    port,
    switchTo(next) {
      current = next;
      for (const socket of open) socket.destroy();
    },
    async close() {
      for (const socket of open) socket.destroy();
      server.close();
      await once(server, "close");
    },
  };
}
