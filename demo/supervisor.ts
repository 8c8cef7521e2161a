import { type ChildProcess, fork } from "node:child_process";
import type { FromWorker, Job, ToWorker, WorkerConfig } from "./protocol.js";
import type { Kill, NetFault, Plan } from "./schedule.js";
import type { WorkerEntry } from "./worker-entry.js";

/** What the supervisor saw of one mode's run (the owners keep their own record of the effects). */
export interface Stats {
  /** Tool calls the agents made, by tool, replays included. */
  calls: Record<string, number>;
  /** Workers that killed themselves with SIGKILL at a scheduled point, and where. */
  kills: { task: string; call: number; tool: string; point: Kill["point"] }[];
  /** Network faults put on a request. */
  net: { task: string; call: number; kind: NetFault }[];
  /** Calls whose `OutcomeUnknownError` reached an agent, once per task and call. */
  unknown: { task: string; call: number; tool: string }[];
  /** Tasks given to two workers at once. */
  concurrent: number;
  /** What went wrong that the demo did not plan: a task that failed, a worker that died on its own. */
  failures: string[];
}

export interface SuperviseOptions {
  plan: Plan;
  config: WorkerConfig;
  entry: WorkerEntry;
  workers: number;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** Told each time a task finishes (all its copies). */
  onProgress?: ((done: number, stats: Stats) => void) | undefined;
}

/** A task replayed this many times is stuck, not unlucky: every scheduled kill is in runs 1 and 2. */
const MAX_RUNS = 6;

interface Worker {
  child: ChildProcess;
  ready: boolean;
  job: Job | undefined;
  dying: Extract<FromWorker, { t: "dying" }> | undefined;
  stderr: string;
}

/**
 * Runs every task of the plan on `workers` worker processes and restarts each worker that dies: the job it was
 * running is queued again, to be replayed from the start (the next run of that copy) by a free worker. A task scheduled as a
 * concurrent duplicate is given to two workers at the same moment. A spare worker is kept started, so that a
 * restart does not wait for a process to boot.
 */
export function supervise(options: SuperviseOptions): Promise<Stats> {
  const { plan, config, entry, workers, timeoutMs, signal, onProgress } = options;
  const stats: Stats = { calls: {}, kills: [], net: [], unknown: [], concurrent: 0, failures: [] };
  const unknownSeen = new Set<string>();
  const index = new Map(plan.tasks.map((t, i) => [t.id, i]));
  const jobFor = (i: number, copy: Job["copy"], run: number): Job => {
    const faults = plan.faults[i]!;
    const primary = copy === "p";
    return {
      task: plan.tasks[i]!,
      copy,
      run,
      kills: primary ? faults.kills.filter((k) => k.run === run) : [],
      net: primary && run === 1 ? [...faults.net] : [],
    };
  };
  const queue: Job[][] = plan.tasks.map((_, i) => {
    const copies = [jobFor(i, "p", 1)];
    if (plan.faults[i]!.duplicate) {
      copies.push(jobFor(i, "d", 1));
      stats.concurrent++;
    }
    return copies;
  });
  const outstanding = queue.map((copies) => copies.length);
  let done = 0;
  const slots: Worker[] = [];
  let spare: Worker | undefined;
  const alive = new Set<Worker>();
  let finished = false;

  return new Promise<Stats>((resolve, reject) => {
    const timer = setTimeout(
      () => finish(new Error(`the run did not finish within ${timeoutMs} ms (seed ${plan.seed})`)),
      timeoutMs,
    );
    const onAbort = () => finish(signal?.reason ?? new Error("aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });

    function finish(error?: unknown) {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      void stopAll().then(() => (error === undefined ? resolve(stats) : reject(error)));
    }

    function start(): Worker {
      const child = fork(entry.script, [JSON.stringify(config)], {
        execArgv: entry.execArgv,
        stdio: ["ignore", "ignore", "pipe", "ipc"],
      });
      const worker: Worker = { child, ready: false, job: undefined, dying: undefined, stderr: "" };
      alive.add(worker);
      child.stderr!.on("data", (chunk: Buffer) => {
        worker.stderr = (worker.stderr + chunk.toString()).slice(-4000);
      });
      child.on("message", (message: FromWorker) => onMessage(worker, message));
      child.on("exit", (code, sig) => onExit(worker, code, sig));
      child.on("error", () => {
        // Sending to a worker that just died: its exit event replays its job.
      });
      return worker;
    }

    function onMessage(worker: Worker, message: FromWorker) {
      switch (message.t) {
        case "ready":
          worker.ready = true;
          break;
        case "call":
          stats.calls[message.tool] = (stats.calls[message.tool] ?? 0) + 1;
          break;
        case "fault":
          stats.net.push({ task: message.task, call: message.call, kind: message.kind });
          break;
        case "unknown": {
          const id = `${message.task}#${message.call}`;
          if (!unknownSeen.has(id)) {
            unknownSeen.add(id);
            stats.unknown.push({ task: message.task, call: message.call, tool: message.tool });
          }
          break;
        }
        case "dying":
          worker.dying = message;
          break;
        case "done":
        case "failed":
          if (message.t === "failed") {
            stats.failures.push(`${message.task} (copy ${message.copy}) failed: ${message.error}`);
          }
          worker.job = undefined;
          settle(message.task);
          break;
      }
      pump();
    }

    function onExit(worker: Worker, code: number | null, sig: NodeJS.Signals | null) {
      alive.delete(worker);
      if (finished) return;
      if (sig === "SIGINT" || sig === "SIGTERM") {
        // Ctrl-C reaches the whole process group: the run is being stopped, not a worker crashing.
        finish(new Error(`a worker was stopped by ${sig}`));
        return;
      }
      const { job, dying } = worker;
      if (job !== undefined) {
        const planned = dying !== undefined && sig === "SIGKILL";
        if (planned)
          stats.kills.push({ task: dying.task, call: dying.call, tool: dying.tool, point: dying.point });
        else {
          stats.failures.push(
            `a worker died unplanned (${sig ?? `exit code ${code}`}) running ${job.task.id}: ${worker.stderr.trim()}`,
          );
        }
        if (job.run >= MAX_RUNS) {
          stats.failures.push(`${job.task.id} was replayed ${job.run} times without finishing`);
          settle(job.task.id);
        } else {
          // Replayed from the start, after the tasks already waiting: by then a killed call's lease has run out,
          // so the replay takes it over at once instead of holding a worker while it waits.
          queue.push([jobFor(index.get(job.task.id)!, job.copy, job.run + 1)]);
        }
      } else {
        stats.failures.push(`an idle worker exited (${sig ?? `exit code ${code}`}): ${worker.stderr.trim()}`);
      }
      if (worker === spare) spare = start();
      const slot = slots.indexOf(worker);
      if (slot !== -1) {
        slots[slot] = spare ?? start();
        spare = start();
      }
      pump();
    }

    function settle(taskId: string) {
      const i = index.get(taskId)!;
      outstanding[i]!--;
      if (outstanding[i] !== 0) return;
      done++;
      onProgress?.(done, stats);
      if (done === plan.tasks.length) finish();
    }

    function pump() {
      while (!finished && queue.length > 0) {
        const copies = queue[0]!;
        const idle = slots.filter((w) => w.ready && w.job === undefined);
        if (idle.length < copies.length) return;
        queue.shift();
        copies.forEach((job, k) => {
          const worker = idle[k]!;
          worker.job = job;
          worker.dying = undefined;
          worker.child.send({ t: "job", job } satisfies ToWorker);
        });
      }
    }

    async function stopAll() {
      const exits = [...alive].map(
        (w) =>
          new Promise<void>((resolveExit) => {
            if (w.child.exitCode !== null || w.child.signalCode !== null) return resolveExit();
            w.child.once("exit", () => resolveExit());
            if (w.child.connected) w.child.send({ t: "exit" } satisfies ToWorker);
            const force = setTimeout(() => w.child.kill("SIGKILL"), 2_000);
            w.child.once("exit", () => clearTimeout(force));
          }),
      );
      await Promise.all(exits);
    }

    for (let i = 0; i < workers; i++) slots.push(start());
    spare = start();
    if (plan.tasks.length === 0) finish();
  });
}
