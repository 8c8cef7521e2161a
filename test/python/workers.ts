import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { tsChildArgs } from "../support/ts-child.js";
import { PYTHON } from "./support.js";
import type { Config, Lang, Line, Result } from "./worker-protocol.js";

// The workers of the cross-language tests (python/tests/worker.py and fixtures/worker.ts, the same tools in each
// language) and the fake owner they append to; what a worker is given and says back is in worker-protocol.ts, the
// stores both open in backends.ts.

export interface Running {
  child: ChildProcess;
  /** With `config.ready`: resolves once the worker is set up and waits for `go`. */
  ready: Promise<void>;
  go(): void;
  /** The worker's results, or `undefined` when it was SIGKILLed. */
  done: Promise<Result[] | undefined>;
}

export function start(lang: Lang, config: Config): Running {
  const [command, args] =
    lang === "python"
      ? [PYTHON, ["python/tests/worker.py", JSON.stringify(config)]]
      : [
          process.execPath,
          [...tsChildArgs(new URL("./fixtures/worker.ts", import.meta.url)), JSON.stringify(config)],
        ];
  const child = spawn(command, args, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
  });
  let out = "";
  let err = "";
  let said: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    said = resolve;
  });
  child.stdout!.on("data", (chunk) => {
    out += chunk;
    if (out.startsWith("ready\n")) said();
  });
  child.stderr!.on("data", (chunk) => {
    err += chunk;
  });
  const done = new Promise<Result[] | undefined>((resolve, reject) => {
    child.on("close", (code, signal) => {
      if (signal === "SIGKILL") resolve(undefined);
      else if (code !== 0) reject(new Error(`${lang} worker exited with ${code}: ${err.slice(-3000)}`));
      else resolve((JSON.parse(out.trim().split("\n").pop()!) as { results: Result[] }).results);
    });
  });
  done.catch(() => {});
  if (!config.ready) child.stdin!.end();
  return { child, ready, go: () => child.stdin!.end("go\n"), done };
}

/** Starts the workers together, once each is set up, and resolves with them started. */
export async function together(workers: Running[]): Promise<Running[]> {
  await Promise.race([
    Promise.all(workers.map((w) => w.ready)),
    ...workers.map((w) => w.done.then(() => {})),
  ]);
  for (const w of workers) w.go();
  return workers;
}

/** Runs a worker to its end and resolves with its results. */
export const run = async (lang: Lang, config: Config) => (await start(lang, config).done)!;

/** The owner file's lines so far. */
export function owner(path: string): Line[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Line);
}

/** Resolves once `check` holds, asked every 10 ms: the event a test waits for, read as it happens. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 6000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`still waiting for ${what} after 6,000 looks`);
}

/** Resolves once the owner file holds a line `match` accepts. */
export function until(path: string, match: (line: Line) => boolean): Promise<void> {
  return waitFor(`a matching line in ${path}`, () => owner(path).some(match));
}
