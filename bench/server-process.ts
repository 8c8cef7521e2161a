import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { bundleForNode } from "./bundle.js";
import { handlerIterations, ITERATIONS_ENV } from "./middleware-handler.js";

/** What a bench asks the server process it loads: how many times the handler ran so far, or to stop. */
export type BenchMessage = { type: "runs" } | { type: "close" };
/** The handler's own count of its runs, all told and under replay keys; a bench may count more (`R`). */
export interface HandlerRuns {
  runs: number;
  replayRuns: number;
  /** The server process's CPU so far (user + system, µs, `process.cpuUsage()`), read as it answers. */
  cpuUs: number;
}

/** This process's CPU so far, user + system, in µs: what a server reports beside its runs. */
export function cpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}
/** What the server process tells its bench over IPC: its port, then the handler's counts each time it is asked. */
export type ServerMessage<R extends HandlerRuns = HandlerRuns> =
  | { type: "ready"; port: number }
  | ({ type: "runs" } & R);

/** A server process a bench loads, driven over IPC. */
export interface ServerProcess<R extends HandlerRuns> {
  port: number;
  /** The handler's counts once no request is still reaching it. */
  runs(): Promise<R>;
  close(): Promise<void>;
}

const OUT = fileURLToPath(new URL("../.tmp/bench/", import.meta.url));
const compiledScripts = new Map<string, Promise<string>>();

/**
 * `script` compiled to one JavaScript file (idemkey's sources bundled in, packages left to node_modules), to run
 * under plain node as a user runs the built package. Under tsx every function expression of idemkey's TypeScript
 * goes through esbuild's `__name` helper (an Object.defineProperty per closure made) and its loader hooks stay in
 * the process, while the peer libraries run as the JavaScript they ship: in issue 44's profiles that was a cost
 * only idemkey paid, per request. Written once per script under .tmp/bench/.
 */
function compile(script: string): Promise<string> {
  let out = compiledScripts.get(script);
  if (out === undefined) {
    mkdirSync(OUT, { recursive: true });
    const outfile = join(OUT, `${basename(script, ".ts")}-${process.pid}.mjs`);
    out = bundleForNode({
      entryPoints: [script],
      outfile,
    }).then(() => outfile);
    compiledScripts.set(script, out);
  }
  return out;
}

/**
 * Forks `script` (which answers with {@link ServerMessage}s) and waits for it to listen. The server gets a process
 * (and, on two cores, a core) of its own, so that autocannon's client work does not run on the event loop being
 * measured; fork() passes on tsx's loader flags through `execArgv`, process.execArgv unless told otherwise. `what`
 * names the server in errors; `quietMs` is how long `runs()` waits between asks for the count to stop moving; `env`
 * adds to the server's environment (a private Redis's URL); `compiled` runs it as plain JavaScript (see compile),
 * and `execArgv` then defaults to none. The handler's iteration count is the driver's.
 */
export async function startServerProcess<R extends HandlerRuns>(
  what: string,
  script: string,
  args: readonly string[],
  options: { quietMs: number; execArgv?: string[]; env?: Record<string, string>; compiled?: boolean },
): Promise<ServerProcess<R>> {
  // Every server does the driver's one handler iteration count (see handlerIterations).
  const iterations = String(handlerIterations());
  const compiled = options.compiled === true;
  const child: ChildProcess = fork(compiled ? await compile(script) : script, args, {
    execArgv: options.execArgv ?? (compiled ? [] : process.execArgv),
    env: { ...process.env, ...options.env, [ITERATIONS_ENV]: iterations },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const next = () =>
    new Promise<ServerMessage<R>>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`${what} exited with ${code}`));
      child.once("exit", onExit);
      child.once("message", (message: ServerMessage<R>) => {
        child.off("exit", onExit);
        resolve(message);
      });
    });
  const first = await next();
  if (first.type !== "ready") throw new Error(`${what} said ${JSON.stringify(first)}`);
  const ask = async (): Promise<R> => {
    const reply = next();
    child.send({ type: "runs" } satisfies BenchMessage);
    const message = await reply;
    if (message.type !== "runs") throw new Error(`${what} said ${JSON.stringify(message)}`);
    const { type: _, ...runs } = message;
    return runs as unknown as R;
  };
  return {
    port: first.port,
    async runs() {
      // Requests autocannon left in flight when it stopped may still reach the handler: wait until none does.
      let last = await ask();
      for (;;) {
        await sleep(options.quietMs);
        const now = await ask();
        if (now.runs === last.runs) return now;
        last = now;
      }
    },
    async close() {
      const exited = once(child, "exit");
      child.send({ type: "close" } satisfies BenchMessage);
      await exited;
    },
  };
}
