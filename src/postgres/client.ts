import { guardStore } from "../store/guard.js";
import { postgresDriver } from "./description.js";

/**
 * The one method the store needs: a `pg.Pool`, a `pg.Client`, PGlite, or any client with the same shape. Values are
 * passed as strings and numbers only; bigint columns may come back as strings, numbers or bigints.
 */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** A checked-out connection of a pool: `effectOnce` needs one connection for its whole transaction. */
export interface PoolClientLike extends Queryable {
  /** Returns the connection to the pool; given an error, the pool discards it instead. */
  release(destroy?: Error | boolean): void;
}

/** A `pg.Pool`, or anything that hands out one connection at a time. */
export interface PoolLike {
  connect(): Promise<PoolClientLike>;
}

/** `"schema"."name"`, quoted so that the name is used exactly as given. */
export const qualified = (schema: string, name: string): string => `"${schema}"."${name}"`;

export { checkIdentifier } from "../store/identifier.js";

/** `guardStore` for PostgreSQL. */
export function guard<T>(operation: string, key: string | undefined, run: () => Promise<T>): Promise<T> {
  return guardStore(postgresDriver, operation, key, run);
}
