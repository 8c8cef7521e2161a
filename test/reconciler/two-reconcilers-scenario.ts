import { expect } from "vitest";
import { createHarness, defineTool, OutcomeUnknownError, type Store } from "../../src/index.js";
import { createReconciler, type SweepReport } from "../../src/reconciler/index.js";

/** What a SQL ledger offers the scenario: a store per reconciler (as two processes would have) and a side table. */
export interface TwoReconcilersLedger {
  /** The store reconciler `i` (0 or 1) uses; store 0 also writes the records. */
  store(i: number): Store;
  /** Records that reconciler `by` asked about `key`, from inside its reconcile callback, in a table of its own. */
  asked(i: number, key: string, by: string): Promise<unknown>;
  /** How many times each key was asked about, read from that table. */
  questions(): Promise<{ key: string; n: number }[]>;
}

const COUNT = 40;

/**
 * Two reconcilers sweep one ledger of 40 unknown outcomes (a quarter left pending by a crashed process): each record
 * is asked about once and decided once. The questions are counted in the ledger's side table, which the reconcile
 * callback writes, never through idemkey.
 */
export async function twoReconcilersDecideOnce(ledger: TwoReconcilersLedger): Promise<void> {
  const store = ledger.store(0);
  const harness = createHarness({ store, retry: { retries: 0 } });
  const lost = defineTool<{ n: number }, unknown>({
    name: "transfer",
    effect: "unguarded",
    run: () => {
      throw new Error("socket hang up");
    },
  });
  const keys: string[] = [];
  for (let n = 0; n < COUNT; n++) {
    await expect(harness.call("task", lost, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
    keys.push(harness.key("task", lost, { n }));
  }
  // A quarter as a crashed process leaves them: pending under a dead token, started, its lease lapsed.
  for (const key of keys.slice(0, COUNT / 4)) {
    const moved = await store.update(
      `call:${key}`,
      { state: "outcome_unknown" },
      { state: "pending", token: "dead", leaseMs: 0 },
    );
    expect(moved?.state).toBe("pending");
  }

  const reconcilers = [0, 1].map((i) => {
    const by = `rec-${i}`;
    const tool = defineTool<{ n: number }, unknown>({
      name: "transfer",
      effect: "unguarded",
      run: () => undefined,
      reconcile: async (args, ctx) => {
        // The side record of every question asked, written by the question itself.
        await ledger.asked(i, ctx.idempotencyKey, by);
        return args.n % 3 === 0 ? { status: "not_done" } : { status: "done", result: { n: args.n } };
      },
    });
    return createReconciler({ store: ledger.store(i), tools: [tool], id: by, concurrency: 4, pageSize: 7 });
  });
  const reports: SweepReport[] = await Promise.all(reconcilers.map((r) => r.sweep()));

  const asked = await ledger.questions();
  expect(asked).toHaveLength(COUNT);
  expect(asked.every((row) => row.n === 1)).toBe(true);
  expect(new Set(asked.map((row) => row.key))).toEqual(new Set(keys));

  for (const [n, key] of keys.entries()) {
    const entry = (await harness.get(key))!;
    expect(entry.state).toBe(n % 3 === 0 ? "approved" : "completed");
    const decisions = entry.events.filter((e) => e.type === "resolved");
    expect(decisions).toHaveLength(1);
  }
  const decided = reports.reduce((sum, r) => sum + r.done + r.notDone, 0);
  expect(decided).toBe(COUNT);
  expect(reports.reduce((sum, r) => sum + r.failed + r.undecided, 0)).toBe(0);
  // Both took part (each sweep starts on the same first page, so the race is real).
  expect(reports.every((r) => r.examined > 0)).toBe(true);
}
