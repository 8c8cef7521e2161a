import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { onCleanup } from "./cleanup.js";
import { freePort } from "./free-port.js";

/**
 * A private `redis-server` on a free port, for the tests that kill, pause or restart it (never the shared one on
 * 6379). No persistence unless asked for; stopped in `stop()` and on the test process's exit.
 */
export interface PrivateRedis {
  port: number;
  url: string;
  /** SIGKILL (the data goes with it unless `appendonly`). */
  kill(): Promise<void>;
  /** SIGSTOP / SIGCONT: the server stops answering, connections stay open. */
  pause(): void;
  resume(): void;
  /** Starts it again on the same port (after `kill`). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Whether this machine has a `redis-server` to start. */
export function redisServerAvailable(): boolean {
  return spawnSync("redis-server", ["--version"]).status === 0;
}

export async function privateRedis(options: { appendonly?: boolean } = {}): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "idemkey-redis-"));
  let child: ChildProcess | undefined;
  const undo = onCleanup(() => {
    const pid = child?.pid;
    if (pid !== undefined && child?.exitCode === null) {
      try {
        process.kill(pid, "SIGCONT");
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async () => {
    child = spawn(
      "redis-server",
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        dir,
        "--save",
        "",
        "--appendonly",
        options.appendonly ? "yes" : "no",
        "--appendfsync",
        "always",
      ],
      { stdio: "ignore" },
    );
    // Ready when it answers PING.
    for (let i = 0; ; i++) {
      const probe = new Redis(port, "127.0.0.1", {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      probe.on("error", () => {});
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        return;
      } catch {
        probe.disconnect();
        if (i > 500) throw new Error(`redis-server on port ${port} did not start`);
        await sleep(10);
      }
    }
  };
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
    c.kill("SIGCONT");
    c.kill("SIGKILL");
    await exited;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill,
    pause: () => child?.kill("SIGSTOP"),
    resume: () => child?.kill("SIGCONT"),
    start,
    async stop() {
      await kill();
      undo();
    },
  };
}
