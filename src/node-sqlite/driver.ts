/*
 * The part of `node:sqlite` this store uses, typed here: @types/node for Node 20 (the oldest Node idemkey runs on)
 * does not declare the module. `node:sqlite` is in Node.js from 22.5 behind a flag and without one from 22.13.
 */

export interface StatementSync {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

export interface DatabaseSync {
  exec(sql: string): void;
  prepare(sql: string): StatementSync;
  close(): void;
  readonly isOpen?: boolean;
  /** Whether a transaction is open (Node.js 22.16 and later). */
  readonly isTransaction?: boolean;
}

export interface NodeSqlite {
  DatabaseSync: new (path: string, options?: { timeout?: number }) => DatabaseSync;
}

/** `node:sqlite`, or `undefined` on a Node.js without it. */
export const nodeSqlite: NodeSqlite | undefined = await import("node:sqlite" as string).then(
  (m) => m as NodeSqlite,
  () => undefined,
);
