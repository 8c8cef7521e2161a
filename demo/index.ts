/**
 * `npm run demo`: the same agent tasks under the same seeded faults in three modes, with the effects counted by the
 * owners. Exits 1 when idemkey's mode shows any duplicate, silent repeat, missing effect or unsurfaced unknown
 * outcome (or the run itself failed), 2 on bad flags, 130 when interrupted.
 */
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import { renderSummary, renderTables, renderTimings } from "./render.js";
import { type ChaosOptions, type ChaosReport, type LedgerOption, runChaos } from "./run.js";

const USAGE = `Usage: npm run demo -- [--tasks N] [--seed S] [--workers W] [--ledger sqlite|postgres|redis] [--keep DIR]
                       [--store-faults] [--json]

  --tasks N     tasks per mode (default 40)
  --seed S      seeds the tasks and the fault schedule; the same seed replays the same run (default 7)
  --workers W   worker processes, at least 2 (default 3)
  --ledger L    idemkey mode's ledger: sqlite (default, a temporary file), postgres (IDEMKEY_PG_URL) or redis
                (IDEMKEY_REDIS_URL)
  --keep DIR    keep idemkey mode's SQLite ledger as DIR/ledger.db, to look at with
                idemkey inspect --store sqlite:DIR/ledger.db
  --store-faults  break idemkey mode's ledger while it runs (connections reset, stalls, lost replies; SQLite: the
                write lock held by another connection)
  --json        print the report as JSON instead of tables`;

function options(): { json: boolean; chaos: ChaosOptions } {
  const { values } = parseArgs({
    options: {
      tasks: { type: "string", short: "n" },
      seed: { type: "string", short: "s" },
      workers: { type: "string", short: "w" },
      ledger: { type: "string" },
      keep: { type: "string" },
      "store-faults": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const int = (flag: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text))
      throw new TypeError(`--${flag} must be a whole number, got ${JSON.stringify(text)}`);
    return Number(text);
  };
  const chaos: ChaosOptions = {};
  const tasks = int("tasks", values.tasks);
  const seed = int("seed", values.seed);
  const workers = int("workers", values.workers);
  if (tasks !== undefined) chaos.tasks = tasks;
  if (seed !== undefined) chaos.seed = seed;
  if (workers !== undefined) chaos.workers = workers;
  if (values.ledger !== undefined) chaos.ledger = ledger(values.ledger);
  if (values.keep !== undefined) chaos.keep = values.keep;
  if (values["store-faults"]) chaos.storeFaults = true;
  return { json: values.json, chaos };
}

function ledger(name: string): LedgerOption {
  if (name === "sqlite") return "sqlite";
  if (name === "postgres") {
    return { kind: "postgres", url: serverUrl("IDEMKEY_PG_URL", "postgres://postgres@127.0.0.1:5432/test") };
  }
  if (name === "redis")
    return { kind: "redis", url: serverUrl("IDEMKEY_REDIS_URL", "redis://127.0.0.1:6379") };
  throw new TypeError(`--ledger must be sqlite, postgres or redis, got ${JSON.stringify(name)}`);
}

/** The server a --ledger names: from its variable, or the local default, said out loud so that it is never a surprise. */
function serverUrl(variable: string, fallback: string): string {
  const url = process.env[variable];
  if (url) return url;
  console.log(`${variable} is not set: idemkey's ledger goes to ${fallback}`);
  return fallback;
}

/** A bar per mode while it runs, on a terminal only: piped output stays clean. */
function progress(): { onProgress: ChaosOptions["onProgress"]; stop(): void } {
  if (!process.stdout.isTTY) return { onProgress: undefined, stop() {} };
  const bars = new cliProgress.MultiBar(
    {
      format: " {mode} |{bar}| {value}/{total} tasks, crashes: {crashes}",
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  let bar: cliProgress.SingleBar | undefined;
  return {
    onProgress({ mode, done, total, crashes }) {
      if (done === 0) bar = bars.create(total, 0, { mode: mode.padEnd(7), crashes });
      else bar?.update(done, { crashes });
    },
    stop: () => bars.stop(),
  };
}

async function main(): Promise<number> {
  let parsed: ReturnType<typeof options>;
  try {
    parsed = options();
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const abort = new AbortController();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => abort.abort(new Error(`interrupted by ${signal}`)));
  }
  const bar = parsed.json ? { onProgress: undefined, stop() {} } : progress();
  let report: ChaosReport;
  try {
    report = await runChaos({ ...parsed.chaos, signal: abort.signal, onProgress: bar.onProgress });
  } catch (error) {
    bar.stop();
    if (error instanceof TypeError) {
      console.error(`${error.message}\n\n${USAGE}`);
      return 2;
    }
    console.error(abort.signal.aborted ? `\n${(error as Error).message}; cleaned up.` : error);
    return abort.signal.aborted ? 130 : 1;
  }
  bar.stop();
  if (parsed.json) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    console.log(
      `\nidemkey chaos demo: ${report.tasks} tasks × ${report.modes.length} modes, seed ${report.seed}, ${report.workers} workers, ` +
        `${report.ledger} ledger. Effects counted by the owners, not the harness.\n`,
    );
    console.log(renderTables(report));
    console.log(`\n${renderSummary(report)}\n`);
    if (report.ok) console.log("OK: with idemkey, every effect happened once.");
    else {
      console.log(`FAILED:\n${report.problems.map((p) => `  - ${p}`).join("\n")}`);
      console.log(`Replay this run with: ${report.replay}`);
    }
    if (report.kept) {
      console.log(
        `\nLedger kept: ${report.kept}, with a refund parked for approval and an email whose outcome is unknown.\n` +
          `Look at it with: npm run inspect -- --store sqlite:${report.kept}`,
      );
    }
    console.log(
      "\nThe code a user writes is the tool definitions: demo/worker/tools.ts (defineTool with an effect and an " +
        "identity), and createHarness in demo/worker/agent.ts.",
    );
    console.error(renderTimings(report));
  }
  return report.ok ? 0 : 1;
}

process.exitCode = await main();
