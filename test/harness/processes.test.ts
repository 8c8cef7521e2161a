import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idempotencyKey } from "../../src/index.js";
import { processBudget } from "../support/budget.js";
import { tsChildArgs } from "../support/ts-child.js";
import { runTogether, spawnWorker } from "../support/workers.js";
import { openSqlite } from "./fixtures/store.js";
import { ARGS, type Execution, KINDS, type Kind, readExecutions } from "./fixtures/tools.js";

/**
 * Real processes on one SQLite file: racing on the same call, and killed with SIGKILL at each point of a call and
 * then replayed by a fresh process. Effects are counted through the file the tools append to, never the ledger.
 */
const dir = mkdtempSync(join(tmpdir(), "idemkey-harness-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url);
const RACERS = 4;

const POINTS = [
  "before_claim",
  "after_claim",
  "in_tool_before_effect",
  "in_tool_after_effect",
  "before_ledger_write",
  "after_ledger_write",
] as const;
type Point = (typeof POINTS)[number];

/**
 * What the replay must find, per kind and crash point: how many times the tool ran in all (crashed process and
 * replay), and whether the replay returned a result or OutcomeUnknownError.
 * - keyed, idempotent: run again only where the ledger write was lost (the effect happened, the record did not);
 *   the owner sees the identical key both times.
 * - unguarded: never run again after an ambiguous point (from the moment the attempt is marked started, before the
 *   tool runs, until the ledger write).
 * - unguarded with reconcile: the reconcile finds out, so the effect happens exactly once everywhere.
 * - read: no ledger; every call runs (a process that never reached a ledger point finished its call normally).
 */
const expected: Record<Kind, Record<Point, [runs: number, outcome: "result" | "OutcomeUnknownError"]>> = {
  keyed: {
    before_claim: [1, "result"],
    after_claim: [1, "result"],
    in_tool_before_effect: [1, "result"],
    in_tool_after_effect: [2, "result"],
    before_ledger_write: [2, "result"],
    after_ledger_write: [1, "result"],
  },
  idempotent: {
    before_claim: [1, "result"],
    after_claim: [1, "result"],
    in_tool_before_effect: [1, "result"],
    in_tool_after_effect: [2, "result"],
    before_ledger_write: [2, "result"],
    after_ledger_write: [1, "result"],
  },
  unguarded: {
    before_claim: [1, "result"],
    // Killed before the attempt was marked started: nothing can have been sent, so the replay runs it.
    after_claim: [1, "result"],
    in_tool_before_effect: [0, "OutcomeUnknownError"],
    in_tool_after_effect: [1, "OutcomeUnknownError"],
    before_ledger_write: [1, "OutcomeUnknownError"],
    after_ledger_write: [1, "result"],
  },
  "unguarded+reconcile": {
    before_claim: [1, "result"],
    after_claim: [1, "result"],
    in_tool_before_effect: [1, "result"],
    in_tool_after_effect: [1, "result"],
    before_ledger_write: [1, "result"],
    after_ledger_write: [1, "result"],
  },
  read: {
    before_claim: [1, "result"],
    after_claim: [2, "result"],
    in_tool_before_effect: [1, "result"],
    in_tool_after_effect: [2, "result"],
    before_ledger_write: [2, "result"],
    after_ledger_write: [2, "result"],
  },
};

/** Runs a crash child until it reaches its point, then kills it with SIGKILL; or until it finishes on its own. */
function crashAt(db: string, effects: string, kind: Kind, point: Point, taskId: string) {
  const child = spawn(
    process.execPath,
    [...tsChildArgs(fixture("crash-child.ts")), db, effects, kind, point, taskId],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on("exit", (code, signal) => resolve(signal ?? code)),
  );
  return new Promise<{ stoppedAt: string | undefined; exit: NodeJS.Signals | number | null }>(
    (resolve, reject) => {
      let stoppedAt: string | undefined;
      createInterface({ input: child.stdout! }).on("line", (line) => {
        if (line.startsWith("at ")) {
          stoppedAt = line.slice(3);
          child.kill("SIGKILL");
        }
      });
      exited.then((exit) => resolve({ stoppedAt, exit }), reject);
    },
  );
}

async function inBatches<T, R>(items: T[], size: number, each: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size)
    out.push(...(await Promise.all(items.slice(i, i + size).map(each))));
  return out;
}

/**
 * The same races and crashes on both SQLite stores: better-sqlite3's sqliteStore and node:sqlite's nodeSqliteStore
 * (Node >= 22.13; skipped by name before). The children pick the store from IDEMKEY_TEST_SQLITE.
 */
const [nodeMajor, nodeMinor] = process.versions.node.split(".").map(Number) as [number, number];
const hasNodeSqlite = nodeMajor > 22 || (nodeMajor === 22 && nodeMinor >= 13);
const DRIVERS = [
  { id: "better-sqlite3", env: undefined, skip: "" },
  {
    id: "node-sqlite",
    env: "node",
    skip: hasNodeSqlite
      ? ""
      : ` (skipped: node:sqlite needs Node >= 22.13, this is ${process.versions.node})`,
  },
] as const;

for (const driver of DRIVERS) {
  describe.skipIf(driver.skip !== "")(`${driver.id}${driver.skip}`, () => {
    beforeAll(() => {
      if (driver.env === undefined) delete process.env.IDEMKEY_TEST_SQLITE;
      else process.env.IDEMKEY_TEST_SQLITE = driver.env;
    });
    afterAll(() => {
      delete process.env.IDEMKEY_TEST_SQLITE;
    });

    describe("processes racing on one SQLite file", () => {
      it(
        "run each call once; the losers wait and return the winner's result",
        async () => {
          const db = join(dir, `race-${driver.id}.db`);
          const effects = join(dir, `race-${driver.id}.jsonl`);
          type Out = { results: { kind: Kind; executedBy: number }[]; events: string[] };
          const workers = Array.from({ length: RACERS }, () =>
            spawnWorker<Out>(fixture("race-child.ts"), [db, effects, "race-task"]),
          );
          const outs = await runTogether(workers);
          const executions = readExecutions(effects);
          expect(executions.map((e) => e.kind).sort()).toEqual(["keyed", "unguarded"]);
          for (const [i, kind] of ["keyed", "unguarded"].entries()) {
            const winner = executions.find((e) => e.kind === kind)!;
            expect(winner.key).toBe(idempotencyKey("race-task", `deploy-${kind}`, ARGS));
            // Every process got the result of the one execution.
            expect(outs.map((o) => o.results[i])).toEqual(outs.map(() => ({ kind, executedBy: winner.pid })));
          }
          const events = outs.flatMap((o) => o.events);
          expect(events.filter((e) => e === "executed")).toHaveLength(2);
          expect(events.filter((e) => e === "replayed")).toHaveLength(6);
        },
        processBudget(RACERS),
      );
    });

    describe("a process killed with SIGKILL at each point of a call, then a replay in a new process", () => {
      const db = join(dir, `crash-${driver.id}.db`);
      const effects = join(dir, `crash-${driver.id}.jsonl`);
      const cases = KINDS.flatMap((kind) =>
        POINTS.map((point) => ({ kind, point, taskId: `crash:${kind}:${point}` })),
      );

      // One crashing process per case, then one replay process: 31 processes, six at a time.
      it("reruns only where the ledger write was lost, always with the identical key", {
        timeout: processBudget(cases.length + 1),
      }, async () => {
        const crashes = await inBatches(cases, 6, (c) => crashAt(db, effects, c.kind, c.point, c.taskId));
        cases.forEach((c, i) => {
          const { stoppedAt, exit } = crashes[i]!;
          const ledgerPoint = !c.point.startsWith("in_tool") && c.point !== "before_claim";
          if (c.kind === "read" && ledgerPoint) {
            // A read call writes no ledger, so it never reaches these points: it ran to the end.
            expect({ case: c.taskId, stoppedAt, exit }).toEqual({
              case: c.taskId,
              stoppedAt: undefined,
              exit: 0,
            });
          } else {
            expect({ case: c.taskId, stoppedAt, exit }).toEqual({
              case: c.taskId,
              stoppedAt: c.point,
              exit: "SIGKILL",
            });
          }
        });

        const replay = spawnWorkerless(db, effects, cases);
        const outcomes = await replay;
        const executions = readExecutions(effects);
        const actual = cases.map((c) => {
          const runs = executions.filter((e) => e.taskId === c.taskId);
          const outcome = outcomes.find((o) => o.taskId === c.taskId)!;
          return {
            case: c.taskId,
            runs: runs.length,
            outcome: outcome.error ?? "result",
            keys: distinctKeys(runs),
          };
        });
        const wanted = cases.map((c) => {
          const [runs, outcome] = expected[c.kind][c.point];
          const key = idempotencyKey(c.taskId, `deploy-${c.kind}`, ARGS);
          return { case: c.taskId, runs, outcome, keys: runs === 0 ? [] : [key] };
        });
        expect(actual).toEqual(wanted);

        // Nothing the ledger says contradicts the effects: a completed unguarded record ran exactly once. Read
        // through the store the children used (better-sqlite3 does not load on Bun or Deno).
        const store = await openSqlite(db);
        try {
          for (const c of cases.filter((c) => c.kind === "unguarded")) {
            const record = await store.get(`call:${idempotencyKey(c.taskId, "deploy-unguarded", ARGS)}`);
            const [, outcome] = expected.unguarded[c.point];
            expect(record?.state).toBe(outcome === "result" ? "completed" : "outcome_unknown");
          }
          const readRecords = await store.list({ prefix: "call:" });
          expect(readRecords.filter((r) => JSON.parse(r.data!).effect === "read")).toEqual([]);
        } finally {
          await store.close();
        }
      });
    });
  });
}

function distinctKeys(runs: Execution[]): string[] {
  return [...new Set(runs.map((r) => r.key))];
}

function spawnWorkerless(db: string, effects: string, cases: { kind: Kind; taskId: string }[]) {
  const child = spawn(
    process.execPath,
    [
      ...tsChildArgs(fixture("replay-child.ts")),
      db,
      effects,
      JSON.stringify(cases.map(({ kind, taskId }) => ({ kind, taskId }))),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  child.stdout!.on("data", (chunk) => {
    out += chunk;
  });
  return new Promise<{ taskId: string; result?: unknown; error?: string }[]>((resolve, reject) =>
    child.on("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`replay exited ${code}`)),
    ),
  );
}
