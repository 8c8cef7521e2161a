import { execFile, execFileSync } from "node:child_process";
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePorts } from "../free-port.js";
import { waitFor } from "./processes.js";

const exec = promisify(execFile);
const BIN = "/usr/lib/postgresql/15/bin";

/** Data directories of servers running now; a worker exiting without its `afterAll` stops them here. */
const running = new Set<string>();
process.once("exit", () => {
  for (const data of running) {
    try {
      const args = ["-D", data, "-m", "immediate", "-w", "stop"];
      if (process.getuid?.() === 0)
        execFileSync("runuser", ["-u", "postgres", "--", join(BIN, "pg_ctl"), ...args]);
      else execFileSync(join(BIN, "pg_ctl"), args);
    } catch {}
  }
});

export interface PgPair {
  primaryPort: number;
  standbyPort: number;
  /** SIGKILLs the primary's postmaster and every backend of it, as a machine lost would. */
  killPrimary(): Promise<void>;
  /**
   * SIGSTOPs the primary's WAL senders: the standby hears nothing more, and an asynchronous primary commits on
   * without it (a standby that lags, as a slow link or a busy standby makes it). `killPrimary` ends them too.
   */
  pauseReplication(): Promise<void>;
  /** `pg_ctl promote` on the standby, waiting until it takes writes. */
  promote(): Promise<void>;
  /** `pg_ctl stop -m immediate` on the primary: every backend gone at once, no checkpoint, as a crash would. */
  stopPrimary(): Promise<void>;
  /**
   * Starts the primary again on its port (after `stopPrimary` or `killPrimary`): crash recovery replays its WAL, so
   * it has every commit it acknowledged. After a promotion it runs on its own, no longer the standby's primary.
   */
  startPrimary(): Promise<void>;
  stop(): Promise<void>;
}

/** Runs a PostgreSQL binary, as the `postgres` user when this process is root (PostgreSQL refuses root). */
async function as(command: string, args: string[]): Promise<string> {
  const root = process.getuid?.() === 0;
  const { stdout } = root
    ? await exec("runuser", ["-u", "postgres", "--", join(BIN, command), ...args])
    : await exec(join(BIN, command), args);
  return stdout;
}

/**
 * A PostgreSQL 15 primary and a streaming standby of the test's own under a temporary directory (`initdb`,
 * `pg_basebackup -R`), on free loopback ports with trust authentication. `synchronous: true` makes the standby
 * synchronous (`synchronous_standby_names`, `synchronous_commit = on`): a commit returns once the standby has it.
 * `stop()` stops both and removes the directory; call it in `afterAll`.
 */
export async function startPgPair({ synchronous }: { synchronous: boolean }): Promise<PgPair> {
  const dir = await mkdtemp(join(tmpdir(), "idemkey-pg-"));
  await chmod(dir, 0o755);
  if (process.getuid?.() === 0) {
    const { stdout } = await exec("id", ["-u", "postgres"]);
    const { stdout: gid } = await exec("id", ["-g", "postgres"]);
    await chown(dir, Number(stdout), Number(gid));
  }
  const [primaryPort, standbyPort] = (await freePorts(2)) as [number, number];
  const primary = join(dir, "primary");
  const standby = join(dir, "standby");
  const stop = async () => {
    for (const data of [primary, standby]) {
      if (!running.has(data)) continue;
      await as("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => {});
      running.delete(data);
    }
    await rm(dir, { recursive: true, force: true });
  };
  // The standby names no standby of its own: once promoted, it must not wait for one that does not exist.
  const settings = (port: number, standbys = "") =>
    [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      "wal_level = replica",
      "max_wal_senders = 5",
      "hot_standby = on",
      // The data only has to outlive a SIGKILL of the server, which the page cache does; spare the shared disk.
      "fsync = off",
      "full_page_writes = off",
      "max_connections = 50",
      "shared_buffers = 16MB",
      `synchronous_standby_names = '${standbys}'`,
      "synchronous_commit = on",
    ].join("\n");
  try {
    await as("initdb", ["-D", primary, "-U", "postgres", "--auth=trust", "--no-sync"]);
    await writeFile(
      join(primary, "postgresql.auto.conf"),
      `${settings(primaryPort, synchronous ? "standby" : "")}\n`,
    );
    const hba = await readFile(join(primary, "pg_hba.conf"), "utf8");
    await writeFile(join(primary, "pg_hba.conf"), `${hba}\nhost replication all 127.0.0.1/32 trust\n`);
    await as("pg_ctl", ["-D", primary, "-l", join(dir, "primary.log"), "-w", "start"]);
    running.add(primary);
    await as("pg_basebackup", [
      "-h",
      "127.0.0.1",
      "-p",
      `${primaryPort}`,
      "-U",
      "postgres",
      "-D",
      standby,
      "-R",
      "-X",
      "stream",
      "--no-sync",
    ]);
    // -R wrote primary_conninfo; name the standby so that synchronous_standby_names can pick it.
    const auto = await readFile(join(standby, "postgresql.auto.conf"), "utf8");
    const conninfo = /primary_conninfo = '(.*)'/.exec(auto)?.[1] ?? "";
    await writeFile(
      join(standby, "postgresql.auto.conf"),
      `${settings(standbyPort)}\nprimary_conninfo = '${conninfo} application_name=standby'\n`,
    );
    await as("pg_ctl", ["-D", standby, "-l", join(dir, "standby.log"), "-w", "start"]);
    running.add(standby);
    const client = new pg.Client({
      host: "127.0.0.1",
      port: primaryPort,
      user: "postgres",
      database: "postgres",
    });
    await client.connect();
    try {
      await waitFor("the standby to stream", async () => {
        const { rows } = await client.query(
          "SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'",
        );
        const want = synchronous ? "sync" : "async";
        return rows[0]?.sync_state === want ? true : undefined;
      });
      await client.query("CREATE DATABASE test");
    } finally {
      await client.end();
    }
  } catch (error) {
    const logs = await Promise.all(
      ["primary.log", "standby.log"].map((f) => readFile(join(dir, f), "utf8").catch(() => "")),
    );
    await stop();
    throw new Error(
      `starting PostgreSQL primary + standby failed: ${(error as Error).message}\n${logs.join("\n")}`,
      {
        cause: error,
      },
    );
  }

  return {
    primaryPort,
    standbyPort,
    async killPrimary() {
      const postmaster = Number((await readFile(join(primary, "postmaster.pid"), "utf8")).split("\n")[0]);
      // The backends first (by their parent, the postmaster), so that none answers after the "machine" is gone.
      const { stdout } = await exec("ps", ["-o", "pid=", "--ppid", `${postmaster}`]);
      for (const pid of stdout.split("\n").map(Number).filter(Boolean)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
      }
      process.kill(postmaster, "SIGKILL");
      await waitFor("the primary to be gone", async () => {
        try {
          process.kill(postmaster, 0);
          return undefined;
        } catch {
          return true;
        }
      });
      running.delete(primary);
    },
    async pauseReplication() {
      const postmaster = Number((await readFile(join(primary, "postmaster.pid"), "utf8")).split("\n")[0]);
      const { stdout } = await exec("ps", ["-o", "pid=,args=", "--ppid", `${postmaster}`]);
      const senders = stdout
        .split("\n")
        .filter((line) => /walsender/.test(line))
        .map((line) => Number(line.trim().split(/\s+/)[0]));
      if (senders.length === 0) throw new Error("the primary has no WAL sender to pause");
      for (const pid of senders) process.kill(pid, "SIGSTOP");
    },
    async promote() {
      await as("pg_ctl", ["-D", standby, "-w", "promote"]);
    },
    async stopPrimary() {
      await as("pg_ctl", ["-D", primary, "-m", "immediate", "-w", "stop"]);
      running.delete(primary);
    },
    async startPrimary() {
      running.add(primary);
      try {
        await as("pg_ctl", ["-D", primary, "-l", join(dir, "primary.log"), "-w", "start"]);
      } catch (error) {
        // pg_ctl only says "examine the log output": the reason is in the log's last lines.
        const log = await readFile(join(dir, "primary.log"), "utf8").catch(() => "");
        const tail = log.trimEnd().split("\n").slice(-8).join("\n");
        throw new Error(`restarting the primary failed: ${(error as Error).message}\n${tail}`, {
          cause: error,
        });
      }
    },
    stop,
  };
}
