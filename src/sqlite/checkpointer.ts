import { Worker } from "node:worker_threads";

/**
 * WAL pages between two checkpoints SQLite runs itself, inside the commit that crosses the mark, on the event loop
 * (SQLite's default is 1,000): a checkpoint fsyncs the log and the file, so at 1,000 one request in ~110-170 waited
 * for both, 80 µs of fsync per fresh request on average; at 4,000 four times less often, each copying once pages
 * written several times. The interval on a file the store opens while no checkpointer runs.
 */
export const CHECKPOINT_PAGES = 4000;

/**
 * The interval left to SQLite beside a checkpointer. The checkpointer copies the log back off the event loop, but
 * the log only restarts (is written again from its start) at a write that finds all of it copied back, which a
 * checkpoint beside a writer that keeps writing never leaves: so under sustained writes SQLite's own checkpoint
 * still restarts it, then with little left to copy, but with its two fsyncs. Ten times less often than without a
 * checkpointer: 20,000 claims and completions spent 175-350 ms in waits over 5 ms, against 910-1,120 ms.
 */
export const BACKSTOP_PAGES = 40_000;

/**
 * The size the log file is cut back to after it restarts (`journal_size_limit`): under sustained writes it reaches
 * ~160 MB before SQLite's checkpoint restarts it, and would otherwise keep that size on disk.
 */
export const LOG_LIMIT_BYTES = 16 * 1024 * 1024;

/** Writes before the checkpointer starts: a store written a little never starts a thread. */
export const STARTUP_WRITES = 1_000;

/** How often the checkpointer copies back what was written since (a pass over nothing new costs ~nothing). */
const INTERVAL_MS = 200;

/** What `PRAGMA wal_checkpoint(PASSIVE)` answered: whether it was blocked, the log's frames, those copied back. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * Checkpoints of one file, run on a worker thread with a connection of its own every INTERVAL_MS, so that their
 * copying and fsyncs keep off the event loop: with SQLite's own checkpoints every 4,000 pages, 20,000 claims and
 * completions spent 35-48% of their time in stalls of up to 45-90 ms (idle and loaded machine). A PASSIVE checkpoint
 * takes no lock that writers or readers wait for; other processes on the file checkpoint it too, which is safe.
 */
export interface Checkpointer {
  /** Counts `rows` rows written (one by default); the worker starts once STARTUP_WRITES were. */
  wrote(rows?: number): void;
  /** Runs a pass now and answers its result (tests and benchmarks); starts the worker if it has not. */
  checkpoint(): Promise<CheckpointResult>;
  /** Stops the worker, after the pass it is running; then the store may close its connection. */
  stop(): Promise<void>;
}

export interface CheckpointerOptions {
  /** The database file. */
  path: string;
  /** `"node:sqlite"`, or the resolved path of the better-sqlite3 module the store uses. */
  module: string;
  /**
   * Called once if the worker cannot start or fails (the driver cannot load in a worker, an I/O error): the store
   * gives SQLite back its own checkpoints, every CHECKPOINT_PAGES.
   */
  onFailure: (error: unknown) => void;
}

/** The worker's code: CommonJS, evaluated, so that it loads the same way from the sources and from the build. */
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const { path, module, intervalMs } = workerData;
const db = module === "node:sqlite"
  ? new (require("node:sqlite").DatabaseSync)(path)
  : new (require(module))(path);
db.exec("PRAGMA busy_timeout = 1000");
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
const pass = () => {
  const row = checkpoint.get();
  return { busy: Number(row.busy), log: Number(row.log), checkpointed: Number(row.checkpointed) };
};
const timer = setInterval(pass, intervalMs);
parentPort.on("message", (message) => {
  if (message !== "stop") return parentPort.postMessage(pass());
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

const FAILED: CheckpointResult = { busy: 1, log: -1, checkpointed: -1 };

export function createCheckpointer({ path, module, onFailure }: CheckpointerOptions): Checkpointer {
  let worker: Worker | undefined;
  let done = false;
  let writes = 0;
  const waiting: ((result: CheckpointResult) => void)[] = [];

  const fail = (error: unknown) => {
    if (done) return;
    done = true;
    worker = undefined;
    for (const resolve of waiting.splice(0)) resolve(FAILED);
    onFailure(error);
  };
  const started = (): Worker | undefined => {
    if (done) return undefined;
    if (worker === undefined) {
      const created = new Worker(WORKER, {
        eval: true,
        workerData: { path, module, intervalMs: INTERVAL_MS },
      });
      created.on("message", (result: CheckpointResult) => {
        waiting.shift()?.(result);
        if (waiting.length === 0) created.unref();
      });
      created.on("error", fail);
      created.on("exit", (code) => {
        if (code !== 0) fail(new Error(`the SQLite checkpointer exited with code ${code}`));
      });
      // Never what keeps a process alive: one that exits without closing its store just stops checkpointing.
      // After the listeners, since adding a "message" listener refs the worker's port again.
      created.unref();
      worker = created;
    }
    return worker;
  };

  return {
    wrote(rows = 1) {
      if (worker !== undefined || done) return;
      writes += rows;
      if (writes >= STARTUP_WRITES) started();
    },
    checkpoint() {
      const running = started();
      if (running === undefined) return Promise.resolve(FAILED);
      return new Promise((resolve) => {
        // Kept alive while a pass is asked for, so that an await of it cannot find the event loop empty.
        if (waiting.length === 0) running.ref();
        waiting.push(resolve);
        running.postMessage("checkpoint");
      });
    },
    async stop() {
      const running = worker;
      done = true;
      worker = undefined;
      if (running === undefined) return;
      const exited = new Promise((resolve) => running.once("exit", resolve));
      running.ref();
      running.postMessage("stop");
      await exited;
    },
  };
}
