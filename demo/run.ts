import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type StoreFaultCounts, startStoreFaults } from "./faults/store.js";
import { leaveForInspector } from "./keep.js";
import { freshLedger, type LedgerOption, ledgerName } from "./ledger.js";
import { startOwners } from "./owners/index.js";
import { Mode, type WorkerConfig } from "./protocol.js";
import { makePlan } from "./schedule.js";
import { supervise } from "./supervisor.js";
import { type ModeReport, tally } from "./tally.js";
import { workerEntry } from "./worker-entry.js";

export type { LedgerOption } from "./ledger.js";
export { Mode } from "./protocol.js";
export type { ModeReport, OwnerReport } from "./tally.js";

export interface ChaosOptions {
  /** How many tasks the scripted model works through in each mode. @default 40 */
  tasks?: number;
  /** Seeds the tasks and the fault schedule; the same seed replays the same run. @default 7 */
  seed?: number;
  /** Worker processes running tasks side by side (at least 2: a concurrent duplicate needs two). @default 3 */
  workers?: number;
  /** The modes to run, in order. @default ["naive", "local", "idemkey"] */
  modes?: readonly Mode[];
  /** The idemkey mode's ledger. @default "sqlite" (a file in the run's temporary directory) */
  ledger?: LedgerOption;
  /**
   * The harness's lease in the ledger modes: how long a killed worker's pending call blocks its replay. Short, so
   * that the run is quick; long enough that a busy machine's stalls do not look like deaths.
   * @default 1500
   */
  leaseMs?: number;
  /**
   * A directory to keep the idemkey mode's SQLite ledger in, as `ledger.db`, after the run, for
   * `idemkey inspect --store sqlite:<dir>/ledger.db`, with a refund parked for approval and an email whose outcome is
   * unknown added for the inspector to act on. Created if missing; refused if it already holds a `ledger.db`,
   * so that two runs never mix. SQLite ledger only.
   * @default none: the ledger goes with the run's temporary directory
   */
  keep?: string;
  /**
   * The store-fault mode: while the idemkey mode runs, its ledger is broken on a seeded schedule (connections reset,
   * traffic stalled for up to one and a half leases, single replies dropped, through a fault proxy for PostgreSQL
   * and Redis; the write lock held by another connection for SQLite).
   * @default false
   */
  storeFaults?: boolean;
  /** Gives up on a mode that runs longer than this, in milliseconds. @default 180000 */
  timeoutMs?: number;
  /** Stops the run: workers are killed, owners closed and the temporary directory removed. */
  signal?: AbortSignal;
  /** Told when a mode starts (`done` 0) and each time one of its tasks finishes. */
  onProgress?: (progress: { mode: Mode; done: number; total: number; crashes: number }) => void;
}

export interface ChaosReport {
  seed: number;
  tasks: number;
  workers: number;
  ledger: string;
  modes: ModeReport[];
  /** What idemkey's mode got wrong (any duplicate, silent repeat, missing effect, unsurfaced unknown) and any
   * failure of the run itself; empty when all is well. */
  problems: string[];
  ok: boolean;
  /** The command that replays this run. */
  replay: string;
  /** The path of the kept SQLite ledger, with `keep`. */
  kept?: string;
  /** What the store-fault mode did to the ledger, with `storeFaults`. */
  storeFaults?: StoreFaultCounts;
}

/**
 * The demo's whole run as a library: for each mode, fresh owners on loopback and a fresh ledger, the same tasks and
 * the same fault schedule, workers supervised until every task finished; then the owners' own records counted.
 */
export async function runChaos(options: ChaosOptions = {}): Promise<ChaosReport> {
  const o = resolveOptions(options);
  const plan = makePlan(o.seed, o.tasks);
  const root = mkdtempSync(join(tmpdir(), "idemkey-demo-"));
  const modes: ModeReport[] = [];
  let storeFaults: StoreFaultCounts | undefined;
  if (o.keep !== undefined) mkdirSync(o.keep, { recursive: true });
  try {
    const entry = await workerEntry(root);
    for (const mode of o.modes) {
      o.signal?.throwIfAborted();
      const dir = join(root, mode);
      mkdirSync(dir);
      const owners = await startOwners(dir);
      const ledger = mode === Mode.idemkey ? freshLedger(o.ledger, o.keep ?? dir) : undefined;
      const faults =
        ledger && o.storeFaults
          ? await startStoreFaults(ledger.spec, { seed: o.seed, leaseMs: o.leaseMs })
          : undefined;
      try {
        const config: WorkerConfig = {
          mode,
          urls: { githost: owners.githost.url, payments: owners.payments.url, email: owners.email.url },
          leaseMs: o.leaseMs,
        };
        if (ledger) config.ledger = faults?.spec ?? ledger.spec;
        const started = performance.now();
        o.onProgress?.({ mode, done: 0, total: plan.tasks.length, crashes: 0 });
        const stats = await supervise({
          plan,
          config,
          entry,
          workers: o.workers,
          timeoutMs: o.timeoutMs,
          signal: o.signal,
          onProgress: (done, s) =>
            o.onProgress?.({ mode, done, total: plan.tasks.length, crashes: s.kills.length }),
        });
        modes.push(tally(mode, plan.tasks, owners.all, stats, Math.round(performance.now() - started)));
      } finally {
        if (faults) storeFaults = await faults.stop();
        await owners.close();
        await ledger?.drop().catch(() => {});
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  if (o.keep !== undefined && o.modes.includes(Mode.idemkey))
    await leaveForInspector(join(o.keep, "ledger.db"));
  const problems = modes.flatMap(problemsOf);
  return {
    seed: o.seed,
    tasks: o.tasks,
    workers: o.workers,
    ledger: ledgerName(o.ledger),
    modes,
    problems,
    ok: problems.length === 0,
    replay:
      `npm run demo -- --seed ${o.seed} --tasks ${o.tasks} --workers ${o.workers}` +
      (o.ledger === "sqlite" ? "" : ` --ledger ${o.ledger.kind}`) +
      (o.storeFaults ? " --store-faults" : ""),
    ...(o.keep !== undefined && o.modes.includes(Mode.idemkey) ? { kept: join(o.keep, "ledger.db") } : {}),
    ...(storeFaults ? { storeFaults } : {}),
  };
}

function problemsOf(report: ModeReport): string[] {
  const problems = report.failures.map((f) => `${report.mode}: ${f}`);
  if (report.mode !== Mode.idemkey) return problems;
  for (const owner of report.owners) {
    if (owner.duplicates > 0)
      problems.push(`idemkey: ${owner.duplicates} duplicate effects at the ${owner.owner}`);
    if (owner.silentRepeats > 0) {
      problems.push(`idemkey: ${owner.silentRepeats} silent repeats of the unguarded ${owner.tool}`);
    }
    if (owner.missing > 0) problems.push(`idemkey: ${owner.missing} effects missing at the ${owner.owner}`);
  }
  for (const u of report.unsurfaced) problems.push(`idemkey: an unknown outcome was not surfaced: ${u}`);
  return problems;
}

interface Resolved {
  tasks: number;
  seed: number;
  workers: number;
  modes: readonly Mode[];
  ledger: LedgerOption;
  leaseMs: number;
  timeoutMs: number;
  keep: string | undefined;
  storeFaults: boolean;
  signal: AbortSignal | undefined;
  onProgress: ChaosOptions["onProgress"];
}

const MODES: readonly Mode[] = Object.values(Mode);

function resolveOptions(options: ChaosOptions): Resolved {
  const integer = (name: string, value: unknown, fallback: number, min: number, max: number) => {
    if (value === undefined) return fallback;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      throw new TypeError(`options.${name} must be an integer from ${min} to ${max}, got ${String(value)}`);
    }
    return value;
  };
  const modes = options.modes ?? MODES;
  if (!Array.isArray(modes) || modes.length === 0 || modes.some((m) => !MODES.includes(m))) {
    throw new TypeError(`options.modes must be a non-empty list of ${MODES.join(", ")}`);
  }
  const ledger = options.ledger ?? "sqlite";
  if (
    ledger !== "sqlite" &&
    !(
      typeof ledger === "object" &&
      (ledger.kind === "postgres" || ledger.kind === "redis") &&
      typeof ledger.url === "string"
    )
  ) {
    throw new TypeError(
      'options.ledger must be "sqlite", { kind: "postgres", url } or { kind: "redis", url }',
    );
  }
  if (options.keep !== undefined) {
    if (typeof options.keep !== "string" || options.keep === "") {
      throw new TypeError("options.keep must be a directory path");
    }
    if (ledger !== "sqlite") throw new TypeError("options.keep works with the SQLite ledger only");
    if (existsSync(join(options.keep, "ledger.db"))) {
      throw new TypeError(
        `options.keep: ${join(options.keep, "ledger.db")} exists; remove it or keep elsewhere`,
      );
    }
  }
  if (options.storeFaults !== undefined && typeof options.storeFaults !== "boolean") {
    throw new TypeError("options.storeFaults must be a boolean");
  }
  if (options.onProgress !== undefined && typeof options.onProgress !== "function") {
    throw new TypeError("options.onProgress must be a function");
  }
  return {
    tasks: integer("tasks", options.tasks, 40, 1, 100_000),
    seed: integer("seed", options.seed, 7, 0, 2 ** 32 - 1),
    workers: integer("workers", options.workers, 3, 2, 32),
    modes: [...modes],
    ledger,
    leaseMs: integer("leaseMs", options.leaseMs, 1_500, 100, 60_000),
    timeoutMs: integer("timeoutMs", options.timeoutMs, 180_000, 1_000, 3_600_000),
    keep: options.keep === undefined ? undefined : resolve(options.keep),
    storeFaults: options.storeFaults ?? false,
    signal: options.signal,
    onProgress: options.onProgress,
  };
}
