import { IdemkeyError } from "../errors/idemkey-error.js";
import { StoreError } from "../errors/store-error.js";

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

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Table and schema names are spliced into SQL, so only plain identifiers pass; otherwise a `TypeError` naming the option. */
export function checkIdentifier(where: string, value: unknown): string {
  if (typeof value !== "string" || !IDENTIFIER.test(value)) {
    throw new TypeError(
      `${where} must be a plain SQL identifier (a letter or _, then letters, digits or _, at most 63), got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** `"schema"."name"`, quoted so that the name is used exactly as given. */
export const qualified = (schema: string, name: string): string => `"${schema}"."${name}"`;

/** Runs one store operation, turning driver and server failures into a `StoreError`; idemkey's own errors pass. */
export async function guard<T>(
  operation: string,
  key: string | undefined,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof IdemkeyError || error instanceof TypeError) throw error;
    const about = key === undefined ? "" : ` of key ${JSON.stringify(key)}`;
    throw new StoreError(
      "postgres",
      operation,
      key,
      `postgres store: ${operation}${about} failed: ${(error as Error)?.message ?? String(error)}. ` +
        "It may or may not have been applied; calling again is safe once PostgreSQL answers.",
      { cause: error },
    );
  }
}
