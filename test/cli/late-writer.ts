import { spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Runs `sh -c pipeline`, whose first stage reads this process's pipe (`cat | ... | idemkey key ...`), and writes
 * `input` into that pipe only once the process running `marker` is waiting on its standard input, or has exited.
 *
 * `(sleep 1; echo '{}') | idemkey key` crashed with EAGAIN only when the second passed after the CLI had made its
 * stdin non-blocking (Node does, for a pipe, as soon as `process.stdin` is touched) and before it read: a CLI that
 * starts in more than a second on a loaded machine finds the input already there, and the old code passed. A writer
 * that waits for the reader, not for a clock, makes the pipe empty when the CLI reads, however slow the machine.
 *
 * "Waiting on its standard input" is read from Linux's /proc: fd 0 is in one of the process's epoll sets, which is
 * where libuv puts a stream it reads asynchronously. A synchronous read (`readFileSync(0)`) never gets there: on an
 * empty non-blocking pipe it fails at once, and the process exits, which ends the wait too.
 */
export async function writeWhenRead(
  pipeline: string,
  marker: string,
  input: string,
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string; waited: "reading" | "exited" }> {
  const sh = spawn("sh", ["-c", pipeline], { cwd, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  sh.stdout.on("data", (d) => (stdout += d));
  sh.stderr.on("data", (d) => (stderr += d));
  const closed = new Promise<number | null>((resolve, reject) => {
    sh.on("error", reject);
    sh.on("close", resolve);
  });
  let pid: number | undefined;
  let waited: "reading" | "exited" | undefined;
  while (waited === undefined) {
    pid ??= childRunning(sh.pid!, marker);
    if (pid !== undefined) {
      if (!alive(pid)) waited = "exited";
      else if (readsStdin(pid)) waited = "reading";
    }
    // A poll, not a budget: the loop ends when the CLI reads or exits, however long it takes to start.
    if (waited === undefined) await sleep(10);
  }
  sh.stdin.end(input);
  const code = await closed;
  return { code, stdout, stderr, waited };
}

/**
 * The pid of the child of `parent` that has `marker` as one of its arguments. One whole argument, not a substring of
 * the command line: a pipeline stage between fork and exec still has the shell's command line, whose script names the
 * marker, and taking it (it then became `cat`, which never reads through epoll) left the wait with nothing to end it.
 */
export function childRunning(parent: number, marker: string): number | undefined {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === parent && readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").includes(marker)) {
        return Number(entry);
      }
    } catch {
      // A process that ended while being read: not the one.
    }
  }
  return undefined;
}

/** Running, not exited: a zombie (exited, not yet reaped by the shell) counts as exited. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Whether fd 0 is in one of the process's epoll sets (`tfd: 0` in the epoll fd's fdinfo). */
function readsStdin(pid: number): boolean {
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) !== "anon_inode:[eventpoll]") continue;
        if (/^tfd:\s+0\s/m.test(readFileSync(`/proc/${pid}/fdinfo/${fd}`, "utf8"))) return true;
      } catch {
        // An fd closed while being read.
      }
    }
  } catch {
    // The process ended: alive() says so on the next turn.
  }
  return false;
}
