import { IdemkeyError } from "../errors/idemkey-error.js";
import { StoreError } from "../errors/store-error.js";

/**
 * Runs one operation of a server store and turns a driver failure into a `StoreError` that says what to do. Our
 * own errors and `TypeError`s (bad input) pass through unchanged.
 */
export async function guardStore<T>(
  engine: string,
  operation: string,
  key: string | undefined,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof IdemkeyError || error instanceof TypeError) throw error;
    const about = key === undefined ? "" : ` of key ${JSON.stringify(key)}`;
    const name =
      engine === "postgres"
        ? "PostgreSQL"
        : engine === "redis"
          ? "Redis"
          : engine === "sqlite"
            ? "SQLite"
            : engine;
    throw new StoreError(
      engine,
      operation,
      key,
      `${engine} store: ${operation}${about} failed: ${(error as Error)?.message ?? String(error)}. ` +
        `It may or may not have been applied; calling again is safe once ${name} answers.`,
      { cause: error },
    );
  }
}
