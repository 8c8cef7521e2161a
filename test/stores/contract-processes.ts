import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { processBudget } from "../support/budget.js";
import { runTogether, spawnWorker, type Worker } from "../support/workers.js";
import type { SharedStoreSpec } from "./fixtures/shared-store.js";

/**
 * A fresh, empty shared store for one test, as the children open it: a new file in `dir` (the suite's own folder,
 * removed after it), or a new table or key prefix on a shared server (the caller removes those). `name` is the
 * test's, unique in the suite and a valid SQL identifier (letters, digits, `_`).
 */
export type SharedStoreFactory = (name: string, dir: string) => SharedStoreSpec | Promise<SharedStoreSpec>;

export interface AcrossProcessesOptions {
  /** Why the suite is skipped (a server that is unreachable outside CI); the store then runs nothing. */
  skip?: string;
}

const racer = new URL("./fixtures/shared-store-racer.ts", import.meta.url);

/** The short lease of the races: short enough that a lease lapses while a killed holder's record waits. */
export const SHORT_LEASE_MS = 1_500;

/** A call's outcome as a racer reports it: the tool's result, or the name of the error the call threw. */
interface Outcome {
  n: number;
  result?: { n: number; pid: number };
  error?: string;
  message?: string;
}
interface RacerOut {
  pid: number;
  outcomes: Outcome[];
}
/** One line of the effects file: the tool of key `n` ran in process `pid`. */
interface Effect {
  n: number;
  pid: number;
}

/**
 * The claim contract where users run it: several OS processes on one store, each calling the same `unguarded` tool
 * for the same keys through the harness (`retry: { retries: 0 }`), the tool appending `{n, pid}` to a file and
 * fsyncing it before it answers. The file, never the store, counts the effects. Run unchanged by every store that two
 * processes can share (the SQLite files, libSQL, PostgreSQL, Redis), beside `testStore`, whose races stay inside one
 * process.
 *
 * - Racing with no process killed, on the short lease and on the default one: each key's tool ran exactly once, and
 *   every call returned that one run's result (or OutcomeUnknownError, should a lease lapse on a loaded machine).
 * - A SIGKILL loop: rounds of processes that each kill themselves at a store write (before it is sent, while it is in
 *   flight, or once it applied), then a round that finishes every key: no key's tool ran twice, and every call of the
 *   last round returned the one run's result or OutcomeUnknownError.
 */
export function testStoreAcrossProcesses(
  name: string,
  factory: SharedStoreFactory,
  options: AcrossProcessesOptions = {},
): void {
  const suite = options.skip ? describe.skip : describe;
  suite(`store contract across processes: ${name}`, () => {
    const dir = mkdtempSync(join(tmpdir(), "idemkey-processes-"));
    const children: Worker<RacerOut>["child"][] = [];
    afterAll(() => {
      // A test that failed half-way (a timeout) may leave racers behind; they are ours to stop.
      for (const child of children)
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    });

    const open = async (test: string) => ({
      spec: JSON.stringify(await factory(test, dir)),
      effects: join(dir, `${test}.effects.jsonl`),
    });
    const spawnRacer = (
      store: { spec: string; effects: string },
      keys: number,
      lease: number | "default",
      killAt = "never",
    ): Worker<RacerOut> => {
      const worker = spawnWorker<RacerOut>(racer, [
        store.spec,
        store.effects,
        String(keys),
        String(lease),
        killAt,
      ]);
      children.push(worker.child);
      return worker;
    };

    const race = (processes: number, keys: number, lease: number | "default", title: string) =>
      it(title, { timeout: processBudget(processes) }, async () => {
        const store = await open(`race_${processes}_${lease}`);
        const outs = await runTogether(
          Array.from({ length: processes }, () => spawnRacer(store, keys, lease)),
        );
        const effects = byKey(readEffects(store.effects), keys);
        expect(twice(effects)).toEqual([]);
        // No process died: someone ran every key.
        expect(effects.map((e, n) => ({ n, runs: e.length }))).toEqual(
          effects.map((_, n) => ({ n, runs: 1 })),
        );
        expect(unexplained(outs, effects)).toEqual([]);
      });

    race(3, 60, SHORT_LEASE_MS, "runs each key's unguarded tool once: 3 processes racing, lease 1.5 s");
    race(2, 60, "default", "runs each key's unguarded tool once: 2 processes racing, the default lease");

    // Three rounds of three processes that each SIGKILL themselves at some store write, then two that finish.
    const ROUNDS = 3;
    const KILLED_PER_ROUND = 3;
    const KEYS = 40;
    const WHEN = ["before", "during", "after"] as const;
    it("never runs a key's unguarded tool twice through a SIGKILL loop: each key once, or OutcomeUnknownError", {
      timeout: processBudget(ROUNDS * KILLED_PER_ROUND + 2),
    }, async () => {
      const store = await open("sigkill");
      for (let round = 0; round < ROUNDS; round++) {
        const workers = Array.from({ length: KILLED_PER_ROUND }, (_, w) => {
          // Spread over the writes of a run (a claim, a started mark and a completion per key run; a claim per
          // replay) and over the three moments around a write; the same points on every run.
          const i = round * KILLED_PER_ROUND + w;
          return spawnRacer(store, KEYS, SHORT_LEASE_MS, `${5 + ((i * 13) % 60)}:${WHEN[i % WHEN.length]}`);
        });
        await Promise.all(workers.map((worker) => worker.ready));
        for (const worker of workers) worker.go();
        const exits: (string | number | null)[] = [];
        for (const worker of workers) {
          await worker.done.catch(() => undefined);
          exits.push(worker.child.signalCode ?? worker.child.exitCode);
        }
        // Killed by itself, or done before its write came: anything else is a failure of the run. Every round
        // has a kill point below any racer's writes (each calls every key at least once), so each round killed.
        expect(
          exits.every((exit) => exit === "SIGKILL" || exit === 0),
          `exits ${exits}`,
        ).toBe(true);
        expect(exits).toContain("SIGKILL");
      }
      const outs = await runTogether([0, 1].map(() => spawnRacer(store, KEYS, SHORT_LEASE_MS)));
      const effects = byKey(readEffects(store.effects), KEYS);
      expect(twice(effects)).toEqual([]);
      expect(unexplained(outs, effects)).toEqual([]);
    });
  });
}

function readEffects(file: string): Effect[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Effect);
}

/** The effects of each key 0..keys-1, in the order they were written. */
function byKey(effects: Effect[], keys: number): Effect[][] {
  const out: Effect[][] = Array.from({ length: keys }, () => []);
  for (const effect of effects) {
    const runs = out[effect.n];
    if (runs === undefined) throw new Error(`an effect for key ${effect.n}, which no racer calls`);
    runs.push(effect);
  }
  return out;
}

/** The keys whose tool ran more than once, with the processes it ran in. */
function twice(effects: Effect[][]): { n: number; pids: number[] }[] {
  return effects.flatMap((runs, n) => (runs.length > 1 ? [{ n, pids: runs.map((r) => r.pid) }] : []));
}

/**
 * The outcomes that the effects do not explain: a result must be the one run's own (the same key, the process that
 * ran it), and the only error allowed is OutcomeUnknownError.
 */
function unexplained(outs: RacerOut[], effects: Effect[][]) {
  return outs.flatMap((out) =>
    out.outcomes.flatMap((outcome) => {
      const runs = effects[outcome.n] ?? [];
      if (outcome.error === "OutcomeUnknownError") return [];
      if (outcome.result !== undefined && runs.length === 1 && outcome.result.pid === runs[0]!.pid) {
        if (outcome.result.n === outcome.n) return [];
      }
      return [{ in: out.pid, ...outcome, runs }];
    }),
  );
}
