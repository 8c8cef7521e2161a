import { readFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { freePorts } from "./free-port.js";

const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

describe("freePorts", () => {
  it("an outgoing connection's local end can hold a port a stopped server wants back (the CI failure)", async () => {
    const target = await listen(0);
    const socket: Socket = await new Promise((resolve, reject) => {
      const s = connect((target.address() as { port: number }).port, "127.0.0.1", () => resolve(s));
      s.once("error", reject);
    });
    try {
      const local = socket.localPort as number;
      expect(local).toBeGreaterThanOrEqual(low);
      await expect(listen(local)).rejects.toMatchObject({ code: "EADDRINUSE" });
    } finally {
      socket.destroy();
      target.close();
    }
  });

  it("gives distinct free ports, and their port + spread, all below the ephemeral range", async () => {
    const ports = await freePorts(6, 10_000);
    expect(new Set(ports).size).toBe(6);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port + 10_000).toBeLessThan(low);
      for (const p of [port, port + 10_000]) (await listen(p)).close();
    }
  });
});
