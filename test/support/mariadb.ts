import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import mysql from "mysql2/promise";
import { onCleanup } from "./cleanup.js";
import { freePort } from "./free-port.js";

/** Debian's MariaDB server binary (package `mariadb-server`, which .ci/run installs when missing). */
export const MARIADBD = process.env.IDEMKEY_MARIADBD || "/usr/sbin/mariadbd";

/**
 * A private MariaDB server on a free port with its own data directory in a temp dir, for one test file: never the
 * shared server on 3306. The data directory starts empty (no `mariadb-install-db`: InnoDB creates its files on first
 * start, and `--skip-grant-tables` lets root in without the grant tables); it starts, shuts down cleanly once (which
 * writes the system tablespace's header: killed before that, it would not start again) and starts again, 0.7 to 2.4 s
 * in all on this shared machine, where `mariadb-install-db` alone took 3.5 s. A restart after `kill()` takes ~0.5 s. Commits are durable (`innodb_flush_log_at_trx_commit=1`, the
 * default), so `kill()` then `start()` finds every committed row again.
 */
export interface PrivateMariaDb {
  port: number;
  /** `mysql://root@127.0.0.1:<port>/<database>`. */
  url: string;
  database: string;
  /** How long the first start took, in ms (reported by the tests, never asserted). */
  startedInMs: number;
  /** SIGKILL: connections drop, uncommitted transactions are rolled back at the next start. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data directory (after `kill`). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Whether this machine has a `mariadbd` to start. */
export function mariadbAvailable(): boolean {
  return spawnSync(MARIADBD, ["--version"]).status === 0;
}

export async function privateMariaDb(database = "idemkey"): Promise<PrivateMariaDb> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "idemkey-mariadb-"));
  const data = join(dir, "data");
  mkdirSync(data);
  let child: ChildProcess | undefined;
  const undo = onCleanup(() => {
    const pid = child?.pid;
    if (pid !== undefined && child?.exitCode === null) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const args = [
    "--no-defaults",
    `--datadir=${data}`,
    `--socket=${join(dir, "mariadb.sock")}`,
    `--pid-file=${join(dir, "mariadb.pid")}`,
    `--log-error=${join(dir, "error.log")}`,
    `--port=${port}`,
    "--bind-address=127.0.0.1",
    "--skip-networking=0",
    "--skip-grant-tables",
    "--skip-name-resolve",
    "--innodb-buffer-pool-size=32M",
    "--innodb-log-file-size=16M",
    "--max-connections=200",
    // Lock waits end in seconds rather than the default 50, should a test leave one behind.
    "--innodb-lock-wait-timeout=10",
    ...(process.getuid?.() === 0 ? ["--user=root"] : []),
  ];
  const start = async () => {
    const c = spawn(MARIADBD, args, { stdio: "ignore" });
    child = c;
    let exited = false;
    c.once("exit", () => {
      exited = true;
    });
    for (let i = 0; ; i++) {
      try {
        const probe = await mysql.createConnection({
          host: "127.0.0.1",
          port,
          user: "root",
          connectTimeout: 2_000,
        });
        await probe.query(`CREATE DATABASE IF NOT EXISTS \`${database}\``);
        await probe.end();
        return;
      } catch {
        if (exited || i > 600) {
          let log = "";
          try {
            log = readFileSync(join(dir, "error.log"), "utf8").slice(-2_000);
          } catch {}
          throw new Error(`mariadbd on port ${port} did not start:\n${log}`);
        }
        await sleep(20);
      }
    }
  };
  const shutdown = async () => {
    const c = child!;
    const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
    const admin = await mysql.createConnection({ host: "127.0.0.1", port, user: "root" });
    await admin.query("SHUTDOWN").catch(() => {});
    await admin.end().catch(() => {});
    await exited;
  };
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
    c.kill("SIGKILL");
    await exited;
  };
  const began = performance.now();
  await start();
  // A server that made its data directory from nothing has not yet written the system tablespace's header to disk:
  // killed now, it would not start again ("Header page consists of zero bytes"). One clean shutdown writes it.
  await shutdown();
  await start();
  const startedInMs = Math.round(performance.now() - began);
  return {
    port,
    url: `mysql://root@127.0.0.1:${port}/${database}`,
    database,
    startedInMs,
    kill,
    start,
    async stop() {
      await kill();
      undo();
    },
  };
}
