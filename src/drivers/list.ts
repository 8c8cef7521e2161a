import { dynamoDriver } from "../dynamodb/description.js";
import { mysqlDriver } from "../mysql/description.js";
import { nodeSqliteDriver } from "../node-sqlite/description.js";
import { postgresDriver } from "../postgres/description.js";
import { redisDriver } from "../redis/description.js";
import { sqliteDriver } from "../sqlite/description.js";
import { memoryDriver } from "../store/description.js";
import { defineDriver, type StoreDriver } from "../store/driver.js";

/*
 * The one list of store drivers that the CLI and the inspector read (unstorage's `_drivers.ts`). Importing it loads
 * each driver's description only: a driver imports its store and its peer package when it opens one.
 * test/stores/drivers.test.ts fails until a store folder with a description.ts is listed here.
 */

/** The drivers idemkey ships, in the order usage lines and hints name them. */
const BUILT_IN: readonly StoreDriver[] = [
  sqliteDriver,
  postgresDriver,
  mysqlDriver,
  redisDriver,
  dynamoDriver,
  nodeSqliteDriver,
  memoryDriver,
];

const registered: StoreDriver[] = [];

/**
 * Adds a driver of your own to the list, so that `openStore`, `parseStoreUrl` and `idemkey inspect --store` open its
 * URLs. Its `engine` and `schemes` must not be taken: a `TypeError` names the one that is.
 *
 * @example
 * registerDriver(defineDriver({ engine: "fauna", name: "Fauna", schemes: ["fauna"], ... }));
 */
export function registerDriver(driver: StoreDriver): void {
  defineDriver(driver);
  for (const other of storeDrivers()) {
    if (other === driver) return;
    if (other.engine === driver.engine) {
      throw new TypeError(
        `registerDriver: engine ${JSON.stringify(driver.engine)} is taken by ${other.name}`,
      );
    }
    const shared = driver.schemes.find((scheme) => other.schemes.includes(scheme));
    if (shared !== undefined) {
      throw new TypeError(`registerDriver: scheme ${shared}: is taken by ${other.name} (${other.engine})`);
    }
  }
  registered.push(driver);
}

/** Every driver: idemkey's own, then those registered, in that order. */
export function storeDrivers(): readonly StoreDriver[] {
  return [...BUILT_IN, ...registered];
}

/** The driver for a URL scheme (lowercase, without the colon), if any. */
export function driverFor(scheme: string): StoreDriver | undefined {
  return storeDrivers().find((driver) => driver.schemes.includes(scheme));
}
