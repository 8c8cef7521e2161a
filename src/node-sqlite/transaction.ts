import type { DatabaseSync, StatementSync } from "./driver.js";

/**
 * Runs `fn` inside `BEGIN IMMEDIATE`, which takes the file's write lock before anything is read, so that no other
 * connection can slip a write between this one's read and its write. `node:sqlite` has no transaction helper.
 */
export function immediate<T>(db: DatabaseSync, fn: () => T): T {
  return inTransaction(db, "BEGIN IMMEDIATE", fn);
}

/**
 * Runs `fn` inside a deferred `BEGIN`: reads take no write lock, and a write upgrades the transaction, failing with
 * SQLITE_BUSY (WAL mode: SQLITE_BUSY_SNAPSHOT) when another connection wrote since this one's first read.
 */
export function deferred<T>(db: DatabaseSync, fn: () => T): T {
  return inTransaction(db, "BEGIN", fn);
}

function inTransaction<T>(db: DatabaseSync, begin: string, fn: () => T): T {
  run(db, begin);
  let result: T;
  try {
    result = fn();
  } catch (error) {
    run(db, "ROLLBACK");
    throw error;
  }
  run(db, "COMMIT");
  return result;
}

// BEGIN, COMMIT and ROLLBACK prepared once per connection, as better-sqlite3's transactions keep theirs: exec()
// parses the text every time, 0.8-1.4 µs of a claim's transaction on Node 22 (a replay's read alone takes ~1-2).
const prepared = new WeakMap<DatabaseSync, Map<string, StatementSync>>();

function run(db: DatabaseSync, sql: string): void {
  let statements = prepared.get(db);
  if (statements === undefined) {
    statements = new Map();
    prepared.set(db, statements);
  }
  let statement = statements.get(sql);
  if (statement === undefined) {
    statement = db.prepare(sql);
    statements.set(sql, statement);
  }
  statement.run();
}
