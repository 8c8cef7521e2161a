import type { DatabaseSync } from "./driver.js";

/**
 * Runs `fn` inside `BEGIN IMMEDIATE`, which takes the file's write lock before anything is read, so that no other
 * connection can slip a write between this one's read and its write. `node:sqlite` has no transaction helper.
 */
export function immediate<T>(db: DatabaseSync, fn: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  let result: T;
  try {
    result = fn();
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
  db.exec("COMMIT");
  return result;
}
