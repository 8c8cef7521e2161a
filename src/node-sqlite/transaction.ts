import type { DatabaseSync, StatementSync } from "./driver.js";

/**
 * Runs `fn` inside `BEGIN IMMEDIATE`, which takes the file's write lock before anything is read, so that no other
 * connection can slip a write between this one's read and its write. `node:sqlite` has no transaction helper.
 * Inside a transaction the application holds open, `fn` runs under a savepoint of it instead (see `nested`).
 */
export function immediate<T>(db: DatabaseSync, fn: () => T): T {
  return nested(db) ? inSavepoint(db, fn) : inTransaction(db, "BEGIN IMMEDIATE", fn);
}

/**
 * Runs `fn` inside a deferred `BEGIN`: reads take no write lock, and a write upgrades the transaction, failing with
 * SQLITE_BUSY (WAL mode: SQLITE_BUSY_SNAPSHOT) when another connection wrote since this one's first read.
 * Inside a transaction the application holds open, `fn` runs under a savepoint of it instead (see `nested`).
 */
export function deferred<T>(db: DatabaseSync, fn: () => T): T {
  return nested(db) ? inSavepoint(db, fn) : inTransaction(db, "BEGIN", fn);
}

/**
 * Whether a transaction is open on `db`: then the store's writes join it, under a savepoint, and commit or roll back
 * with it, as better-sqlite3's `db.transaction()` does (a BEGIN there fails: "cannot start a transaction within a
 * transaction"). Node.js 22.13-22.15 cannot say (no `isTransaction`): a savepoint is right either way, since outside
 * a transaction it begins a deferred one that its RELEASE commits; only the immediate lock is given up there.
 */
function nested(db: DatabaseSync): boolean {
  return db.isTransaction !== false;
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

/**
 * Runs `fn` under a savepoint: its writes are undone alone when it throws, and otherwise stay in the enclosing
 * transaction, whose owner commits or rolls them back. A savepoint SQLite has already undone with the whole
 * transaction (SQLITE_FULL, an I/O error) cannot be rolled back to: the error `fn` threw is the one to report.
 */
function inSavepoint<T>(db: DatabaseSync, fn: () => T): T {
  run(db, "SAVEPOINT idemkey_transaction");
  let result: T;
  try {
    result = fn();
  } catch (error) {
    try {
      run(db, "ROLLBACK TO idemkey_transaction");
      run(db, "RELEASE idemkey_transaction");
    } catch {
      // Undone already, with the enclosing transaction.
    }
    throw error;
  }
  run(db, "RELEASE idemkey_transaction");
  return result;
}

// BEGIN, COMMIT, ROLLBACK and the savepoint's statements prepared once per connection, as better-sqlite3's transactions keep theirs: exec()
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
