import { PREFIX } from "../harness/ledger.js";
import type { RecordState, StoreRecord } from "../store/types.js";
import { decide, type Outcome } from "./decide.js";
import type { Resolved } from "./options.js";

/** What one sweep did, record by record. */
export interface SweepReport {
  /** Records listed in the two states a reconciler looks at. */
  examined: number;
  /** Decided as having taken effect: completed with the result reconcile found. */
  done: number;
  /** Decided as not having taken effect: approved, so that the next call with the key runs it. */
  notDone: number;
  /** Asked, and nobody could tell: left `outcome_unknown`, with the reason in the audit trail. */
  undecided: number;
  /** Not this sweep's to decide (not lapsed, not started, waiting for its next try, or stopped). */
  skipped: number;
  /** Taken or moved by someone else first. */
  conflict: number;
  /** A store error on the way: the record stays undecided. */
  failed: number;
}

const STATES: RecordState[] = ["outcome_unknown", "pending"];

const FIELD: Record<Outcome, keyof SweepReport> = {
  done: "done",
  not_done: "notDone",
  undecided: "undecided",
  skipped: "skipped",
  conflict: "conflict",
  failed: "failed",
};

/**
 * One pass over the ledger: every `outcome_unknown` record and every pending one, page by page, each decided by one
 * of `concurrency` workers. Once `signal` aborts no record is started; those under way finish their write.
 */
export async function sweep(core: Resolved, signal: AbortSignal): Promise<SweepReport> {
  const report: SweepReport = {
    examined: 0,
    done: 0,
    notDone: 0,
    undecided: 0,
    skipped: 0,
    conflict: 0,
    failed: 0,
  };
  const records = listed(core, signal);
  const worker = async () => {
    // An async generator queues concurrent `next()` calls: each record goes to one worker.
    for (let next = await records.next(); !next.done; next = await records.next()) {
      report.examined++;
      if (signal.aborted) {
        report.skipped++;
        continue;
      }
      report[FIELD[await decide(core, next.value, signal)]]++;
    }
  };
  await Promise.all(Array.from({ length: core.concurrency }, worker));
  return report;
}

async function* listed(core: Resolved, signal: AbortSignal): AsyncGenerator<StoreRecord> {
  // A record this sweep took is pending while it is asked, and may show up on the pending pages: once is enough.
  const seen = new Set<string>();
  for (const state of STATES) {
    let after: string | undefined;
    for (;;) {
      if (signal.aborted) return;
      const page = await core.store.list({
        prefix: PREFIX,
        state,
        limit: core.pageSize,
        ...(after === undefined ? {} : { after }),
      });
      for (const record of page) {
        if (seen.has(record.key)) continue;
        seen.add(record.key);
        yield record;
      }
      if (page.length < core.pageSize) break;
      after = page[page.length - 1]!.key;
    }
  }
}
