/*
 * Group commit for the SQLite stores. The first write of a turn of the event loop runs at once, alone; the writes
 * that follow it in the same turn (the claims and completions of concurrent requests, an agent's parallel tool
 * calls) wait for the next turn and share one transaction and one commit. A commit costs its locks and one log
 * frame per page it changed, whatever it holds: 8 claims and completions together took ~15 µs each here, one by
 * one ~47 µs. A lone caller (one request at a time, a tool that awaits I/O between its claim and its completion)
 * never waits a turn. Nor, mostly, does one whose claim and completion fall in one turn (a synchronous tool): once
 * groups of one follow one another, the writes that would wait run alone, all but one in SOLO_WRITES, which waits
 * to see whether a group forms again. No write is answered before the commit that holds it.
 */
import type { SqliteConnection, SqliteStatement } from "./records.js";

/** One write as the group runs it, and as it runs alone when the group cannot. */
export interface GroupedWrite<T> {
  /** The write's statements; inside the group's transaction, under a savepoint of its own. */
  body: () => T;
  /** The write by itself, in a transaction of its own where it needs one, with the store's retries and errors. */
  alone: () => Promise<T>;
  /** How an error `body` threw inside the group is reported (as the store reports the same error alone). */
  failed: (error: unknown) => Promise<T>;
}

export interface GroupCommit {
  /**
   * Runs the write alone at once when it is the first of this turn of the event loop, or else in the group of the
   * turn's later writes, which commits on the next turn.
   */
  write<T>(write: GroupedWrite<T>): Promise<T>;
  /** Whether a write made now would wait for the group. */
  waits(): boolean;
  /** Runs the waiting group now: before the connection closes. */
  drain(): void;
}

interface Waiting extends GroupedWrite<unknown> {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { value: unknown } | { error: unknown };

/**
 * Writes that run alone, instead of waiting a turn for a group, after two groups of one in a row: a turn cost a
 * lone caller's fresh harness call on a file 14-25 µs of 75-100. One in SOLO_WRITES still waits, so that concurrent
 * writers find their groups again within this many writes.
 */
export const SOLO_WRITES = 32;

/**
 * The group commit of one connection. `prepare` is the store's statement cache; `ready` applies the open-time
 * settings and the schema, as before any operation.
 */
export function groupCommit(
  conn: SqliteConnection,
  prepare: (sql: string) => SqliteStatement,
  ready: () => void,
): GroupCommit {
  let waiting: Waiting[] = [];
  // Set by a write that ran alone, until the loop turns.
  let wroteThisTurn = false;
  const turned = () => {
    wroteThisTurn = false;
  };
  // Groups of one in a row, and the writes still to run alone before the next one waits again.
  let singles = 0;
  let solo = 0;
  // Whether a write made now waits for the group: not the turn's first, and no solo run to take it alone.
  const waits = () => wroteThisTurn && (solo === 0 || waiting.length > 0);

  const alone = (write: Waiting) => {
    write.alone().then(write.resolve, write.reject);
  };
  // A write that fails inside the group is undone to its savepoint and the others go on; a busy lock is not the
  // write's own failure, so it undoes the whole group (thrown on), whose writes then run alone with their retries.
  const inSavepoint = (write: Waiting): Outcome => {
    prepare("SAVEPOINT idemkey_write").run();
    try {
      const value = write.body();
      prepare("RELEASE idemkey_write").run();
      return { value };
    } catch (error) {
      if (conn.isBusy(error)) throw error;
      // Throws when SQLite has already rolled the whole transaction back (SQLITE_FULL, an I/O error): the group
      // then ends as a busy one does.
      prepare("ROLLBACK TO idemkey_write").run();
      prepare("RELEASE idemkey_write").run();
      return { error };
    }
  };

  const flush = () => {
    const group = waiting;
    waiting = [];
    singles = group.length === 1 ? singles + 1 : 0;
    if (singles >= 2) solo = SOLO_WRITES - 1;
    // A caller's own transaction (a Database passed in) decides when its writes commit: each joins it, as it would
    // have alone.
    if (group.length === 1 || conn.inTransaction) {
      for (const write of group) alone(write);
      return;
    }
    let outcomes: Outcome[];
    try {
      ready();
      outcomes = conn.deferred(() => group.map(inSavepoint));
    } catch {
      // Nothing of the group was committed (a busy lock, a commit that failed): each write is tried again alone,
      // which is safe, and fails or succeeds as it would have without the group.
      if (conn.inTransaction) rollback(conn);
      for (const write of group) alone(write);
      return;
    }
    group.forEach((write, i) => {
      const outcome = outcomes[i]!;
      if ("error" in outcome) write.failed(outcome.error).then(write.resolve, write.reject);
      else write.resolve(outcome.value);
    });
  };

  return {
    write: <T>(write: GroupedWrite<T>) => {
      if (!wroteThisTurn) {
        wroteThisTurn = true;
        setImmediate(turned);
        return write.alone();
      }
      if (!waits()) {
        solo--;
        return write.alone();
      }
      return new Promise<T>((resolve, reject) => {
        waiting.push({
          ...(write as GroupedWrite<unknown>),
          resolve: resolve as (value: unknown) => void,
          reject,
        });
        if (waiting.length === 1) setImmediate(flush);
      });
    },
    waits,
    drain: flush,
  };
}

/** Ends a transaction a failed COMMIT left open (node:sqlite's helper does not roll back after one). */
function rollback(conn: SqliteConnection): void {
  try {
    conn.exec("ROLLBACK");
  } catch {
    // Already ended: nothing is left to undo.
  }
}
