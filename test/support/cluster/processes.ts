import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";

/** Every server a test started, so that an exiting worker kills what a failed `afterAll` left behind. */
const started = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of started) child.kill("SIGKILL");
});

/** Starts a server process of the test's own; its output goes to `log` lines kept for a failure message. */
export function startProcess(command: string, args: string[]): { child: ChildProcess; log: string[] } {
  const log: string[] = [];
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  started.add(child);
  child.once("exit", () => started.delete(child));
  const keep = (chunk: Buffer) => {
    log.push(...chunk.toString().split("\n").filter(Boolean));
    if (log.length > 200) log.splice(0, log.length - 200);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return { child, log };
}

/** SIGKILLs a child and waits for its exit. */
export async function killProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

/**
 * Polls `check` until it returns a value other than undefined, for at most `timeoutMs` (a bound for a hung
 * server, far above what the step takes on a loaded machine, not a performance budget).
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}`,
      );
    }
    await sleep(50);
  }
}
