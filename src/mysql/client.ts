import { setTimeout as sleep } from "node:timers/promises";
import { guardStore } from "../store/guard.js";
import { mysqlDriver } from "./description.js";

/**
 * The one method the store needs of a `mysql2/promise` `Pool` (or a `Connection`, a `PoolNamespace`): a query with
 * `?` placeholders answering `[rows, fields]`. Rows for a SELECT, a result header (`affectedRows`) otherwise.
 */
export interface MysqlQueryable {
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>;
}

/** A connection checked out of a pool, for a transaction: returned with `release`, or dropped with `destroy`. */
export interface MysqlConnectionLike extends MysqlQueryable {
  release(): void;
  /** Closes the connection instead of returning it: after a failure its state is unknown. */
  destroy?(): void;
}

/** A `mysql2/promise` `Pool`: queries, and one connection at a time for the store's short transactions. */
export interface MysqlPoolLike extends MysqlQueryable {
  getConnection(): Promise<MysqlConnectionLike>;
}

/** What an INSERT, UPDATE or DELETE answers. */
export interface ResultHeader {
  affectedRows: number;
}

/** The server's error codes the store decides on (`error.errno` in mysql2). */
export const ER = {
  /** The server chose this transaction as a deadlock's victim and rolled it back. */
  LOCK_DEADLOCK: 1213,
  /** A lock wait timed out; the statement (or, with innodb_rollback_on_timeout, the transaction) was rolled back. */
  LOCK_WAIT_TIMEOUT: 1205,
  DUP_ENTRY: 1062,
  NO_SUCH_TABLE: 1146,
} as const;

export const errno = (error: unknown): number | undefined => {
  const n = (error as { errno?: unknown } | null)?.errno;
  return typeof n === "number" ? n : undefined;
};

/**
 * A failure the server itself says undid the work: a deadlock's victim or a lock wait that timed out. Nothing of the
 * statement (or transaction) was applied, so running it again is the right answer, not an unknown outcome.
 */
export const isDecidedRollback = (error: unknown): boolean => {
  const n = errno(error);
  return n === ER.LOCK_DEADLOCK || n === ER.LOCK_WAIT_TIMEOUT;
};

/** How often an operation the server rolled back runs again before its error is reported. */
const ROLLBACK_ATTEMPTS = 8;

/**
 * Runs `run` again while the server answers that it rolled it back (deadlock, lock wait timeout), after a short
 * random pause that lets the other transaction finish. Any other error, and the last rollback, go to the caller.
 */
export async function retryRollbacks<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (!isDecidedRollback(error) || attempt >= ROLLBACK_ATTEMPTS) throw error;
      await sleep(Math.random() * 5 * 2 ** Math.min(attempt, 5));
    }
  }
}

/** `guardStore` for MySQL, with the server's decided rollbacks run again first. */
export function guard<T>(operation: string, key: string | undefined, run: () => Promise<T>): Promise<T> {
  return guardStore(mysqlDriver, operation, key, () => retryRollbacks(run));
}

/**
 * `guardStore` for MySQL without running anything again: for a statement inside a transaction of the caller's,
 * which a rollback by the server has ended (running the statement alone afterwards would commit it on its own).
 */
export function guardOnce<T>(operation: string, key: string | undefined, run: () => Promise<T>): Promise<T> {
  return guardStore(mysqlDriver, operation, key, run);
}

export { checkIdentifier } from "../store/identifier.js";

/** `` `name` ``: table names are checked identifiers, quoted so that a reserved word still works. */
export const quoted = (name: string): string => `\`${name}\``;
