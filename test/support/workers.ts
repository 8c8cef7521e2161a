import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { lineReader } from "./lines.js";
import { tsChildArgs } from "./ts-child.js";

/**
 * A worker in its own OS process (`node --import tsx script ...args`) that follows a tiny line protocol on its
 * stdout: it prints `ready` once set up, waits for `go` on stdin (so that several workers start together), and
 * prints one JSON line with its result before exiting with status 0. Anything else it prints goes to stderr.
 */
export interface Worker<T> {
  child: ChildProcess;
  /** Resolves when the worker printed `ready`; rejects if it exited first. */
  ready: Promise<void>;
  go(): void;
  /** The worker's JSON result, once it exited with status 0. */
  done: Promise<T>;
}

export function spawnWorker<T>(script: URL, args: string[], env: NodeJS.ProcessEnv = {}): Worker<T> {
  const child = spawn(process.execPath, [...tsChildArgs(script), ...args], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
  const next = lineReader(child.stdout!);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const beforeExit = <R>(p: Promise<R>) =>
    Promise.race([
      p,
      exited.then(({ code, signal }) => {
        throw new Error(`worker ${fileURLToPath(script)} ${args.join(" ")} exited early (${signal ?? code})`);
      }),
    ]);
  const ready = beforeExit(next()).then((line) => {
    if (line !== "ready") throw new Error(`worker said ${JSON.stringify(line)} instead of "ready"`);
  });
  const done = beforeExit(next()).then(async (line) => {
    const { code, signal } = await exited;
    if (code !== 0) throw new Error(`worker exited with ${signal ?? code} after printing ${line}`);
    return JSON.parse(line) as T;
  });
  // Keep unhandled-rejection noise away when a test only awaits one of them.
  ready.catch(() => {});
  done.catch(() => {});
  return { child, ready, go: () => child.stdin!.end("go\n"), done };
}

/** The worker side of the protocol: prints `ready`, resolves on `go`, and lets the process exit afterwards. */
export async function readyAndWaitForGo(): Promise<void> {
  process.stdout.write("ready\n");
  const input = createInterface({ input: process.stdin });
  await new Promise<void>((resolve) => input.once("line", () => resolve()));
  input.close();
  process.stdin.destroy();
}

/** Starts every worker at once, after all are ready, and returns their results in order. */
export async function runTogether<T>(workers: Worker<T>[]): Promise<T[]> {
  await Promise.all(workers.map((w) => w.ready));
  for (const w of workers) w.go();
  return Promise.all(workers.map((w) => w.done));
}
