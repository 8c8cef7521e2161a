import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy of the tests' own between a client and a server, to break the link on command: drop the next reply
 * (and reset the connection, as a lost reply looks to a client), reset every connection, or stall (hold traffic in
 * both directions until `resume`).
 */
export interface FaultProxy {
  port: number;
  /** The next chunk the server sends is dropped and the client's connection reset; resolves when that happened. */
  dropNextReply(): Promise<void>;
  /** Resets every open connection now. */
  resetAll(): void;
  /** Holds all traffic (new connections too) until `resume`. */
  stall(): void;
  resume(): void;
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function faultProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<FaultProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let dropArmed: (() => void) | undefined;
  let stalled = false;
  const held: (() => void)[] = [];
  let accepted = 0;

  const whenFlowing = (fn: () => void) => {
    if (stalled) held.push(fn);
    else fn();
  };

  const server: Server = createServer((client) => {
    accepted++;
    const upstream = connect(targetPort, targetHost);
    const pair = { client, upstream };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
    client.on("data", (chunk) => whenFlowing(() => upstream.write(chunk)));
    upstream.on("data", (chunk) =>
      whenFlowing(() => {
        if (dropArmed) {
          const done = dropArmed;
          dropArmed = undefined;
          client.resetAndDestroy();
          upstream.destroy();
          done();
          return;
        }
        client.write(chunk);
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };

  const proxy: FaultProxy = {
    port,
    get connections() {
      return accepted;
    },
    dropNextReply: () =>
      new Promise<void>((resolve) => {
        dropArmed = resolve;
      }),
    resetAll() {
      for (const { client, upstream } of pairs) {
        client.resetAndDestroy();
        upstream.destroy();
      }
    },
    stall() {
      stalled = true;
    },
    resume() {
      stalled = false;
      for (const fn of held.splice(0)) fn();
    },
    async close() {
      proxy.resume();
      proxy.resetAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
