import { IdemkeyError } from "../errors/idemkey-error.js";
import { StoreError } from "../errors/store-error.js";
import { describeThrown } from "../options/describe.js";
import type { DriverName } from "./driver.js";

/**
 * Runs one operation of a server store and turns a driver failure into a `StoreError` that says what to do. Our
 * own errors and `TypeError`s (bad input) pass through unchanged. `driver` is the store folder's description (its
 * `engine` starts the message, its `name` says who must answer), so that this file knows no store by name. A bare
 * engine string (the older form) serves as both.
 */
export async function guardStore<T>(
  driver: DriverName | string,
  operation: string,
  key: string | undefined,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw storeFailure(driver, operation, key, error);
  }
}

/**
 * What `guardStore` throws for `error`: the error itself when it is our own or a `TypeError`, else a `StoreError`.
 * For a store that folds its own wrappers into one `catch` (the Redis store), so that an operation awaits once.
 */
export function storeFailure(
  driver: DriverName | string,
  operation: string,
  key: string | undefined,
  error: unknown,
): unknown {
  if (error instanceof IdemkeyError || error instanceof TypeError) return error;
  const { engine, name } = typeof driver === "string" ? { engine: driver, name: driver } : driver;
  return new StoreError({
    store: engine,
    operation,
    key,
    cause: error,
    detail: describeThrown(error),
    server: name,
  });
}
