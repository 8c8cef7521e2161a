import type { Kill, Net, NetFault, Task } from "./schedule.js";

/** The demo-only headers a worker sends: which fault to play, and which copy, run, call and attempt this is. */
export const FAULT_HEADER = "x-demo-fault";
export const TRACE_HEADER = "x-demo-trace";

/** The three ways of running the same tasks under the same faults. */
export const Mode = {
  /** Retries with nothing to recognise them: no key, no ledger. */
  naive: "naive",
  /** The harness with its key in an in-memory ledger of each worker; the key is never sent to the owners. */
  local: "local",
  /** idemkey: the key forwarded to the owners (`idempotentFetch`) and a durable ledger shared by the workers. */
  idemkey: "idemkey",
} as const;
export type Mode = (typeof Mode)[keyof typeof Mode];

/** Where the idemkey mode's ledger lives, as a worker opens it. */
export type LedgerSpec =
  | { kind: "sqlite"; path: string }
  | { kind: "postgres"; url: string; table: string }
  | { kind: "redis"; url: string; prefix: string; cluster?: string[] };

/** What a worker process is started with (its one command-line argument, as JSON). */
export interface WorkerConfig {
  mode: Mode;
  urls: { githost: string; payments: string; email: string };
  /** Only in the idemkey mode. */
  ledger?: LedgerSpec;
  leaseMs: number;
}

/** One copy of a task for one run, with the faults that apply to that run. */
export interface Job {
  task: Task;
  /** `p`: the task's primary copy, which carries the faults; `d`: the concurrent duplicate, which carries none. */
  copy: "p" | "d";
  /** 1 for the first run of this copy, 2 for its replay after a crash, ... */
  run: number;
  kills: Kill[];
  net: Net[];
}

export type ToWorker = { t: "job"; job: Job } | { t: "exit" };

export type FromWorker =
  | { t: "ready" }
  /** The agent made a tool call (a `harness.call`, or a naive call). */
  | { t: "call"; tool: string }
  /** A demo fault header was put on a request. */
  | { t: "fault"; task: string; call: number; kind: NetFault }
  /** `harness.call` threw `OutcomeUnknownError`. */
  | { t: "unknown"; task: string; call: number; tool: string }
  /** Sent just before the worker kills itself with SIGKILL. */
  | { t: "dying"; task: string; call: number; tool: string; point: Kill["point"] }
  | { t: "done"; task: string; copy: Job["copy"] }
  | { t: "failed"; task: string; copy: Job["copy"]; error: string };
