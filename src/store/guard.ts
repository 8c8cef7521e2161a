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
    if (error instanceof IdemkeyError || error instanceof TypeError) throw error;
    const { engine, name } = typeof driver === "string" ? { engine: driver, name: driver } : driver;
    throw new StoreError({
      store: engine,
      operation,
      key,
      cause: error,
      detail: describeThrown(error),
      server: name,
    });
  }
}
