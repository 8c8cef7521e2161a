import type { Store } from "./types.js";

/*
 * A store folder describes itself with one `StoreDriver`: what it is called, the URLs that name it, the peer
 * packages it needs and how to open one from a URL. The CLI, the inspector and `guardStore` read these, so nothing
 * outside the folder switches on a store's name (unstorage's `DRIVER_NAME` and `defineDriver` are the model).
 */

/** A peer package a driver needs, with the versions idemkey supports (the range in its package.json). */
export interface DriverPeer {
  /** The package to install: `"pg"`. */
  package: string;
  /** Its range in idemkey's `peerDependencies`: `"^8.0.0"`. */
  range: string;
}

/** What a store URL says besides its kind: `{ path, table }` for `sqlite:./ledger.db?table=calls`. */
export type StoreUrlFields = Readonly<Record<string, string>>;

/**
 * What a driver's `parse` and `open` are given to report a URL they cannot read. `shown` is the URL as given with
 * any password masked; `fail` throws the `StoreUrlError` for it, its message `--store <shown><problem>`.
 */
export interface StoreUrlContext {
  readonly shown: string;
  fail(problem: string, options?: ErrorOptions): never;
}

/** A store opened from a URL, and how to close it with the client it opened. */
export interface OpenedStore {
  store: Store;
  /** The URL with any password masked, for the page and the logs. */
  label: string;
  close(): Promise<void>;
}

/** What `guardStore` needs of a driver: the word for its errors and the name for its prose. */
export interface DriverName {
  /**
   * The store's short name: `StoreError.store`, the `kind` of a parsed URL, the start of its error messages
   * (`"sqlite store: claim ... failed"`). Lowercase, unique among the drivers.
   */
  engine: string;
  /** The name people know it by, for prose: `"SQLite"`, `"PostgreSQL"`. */
  name: string;
}

export interface StoreDriver extends DriverName {
  /** The URL schemes that name it, lowercase and without the colon: `["postgres", "postgresql"]`. */
  schemes: readonly string[];
  /** The URL form for usage lines and hints: `"sqlite:<path>"`, `"redis://..."`. */
  example: string;
  /** The query parameters it reads itself, for usage lines: `["table", "schema"]`. */
  params: readonly string[];
  /** The peer packages it needs, any one of them; `open` imports the first, and only when asked to. */
  peers: readonly DriverPeer[];
  /** Reads a URL of one of its schemes without connecting; `fail` reports what is wrong with it. */
  parse(url: string, context: StoreUrlContext): StoreUrlFields;
  /**
   * Opens the store what `parse` returned names, with a client of its own (closed by `close`). Peers are imported
   * here, lazily, through `importPeer`, so that opening one kind never needs another kind's package.
   */
  open(fields: StoreUrlFields, context: StoreUrlContext & { label: string }): Promise<OpenedStore>;
}

/**
 * Checks a driver's description once, where it is defined, and returns it as given. A `TypeError` names the field.
 *
 * @example
 * export const sqliteDriver = defineDriver({ engine: "sqlite", name: "SQLite", schemes: ["sqlite"], ... });
 */
export function defineDriver<D extends StoreDriver>(driver: D): D {
  const where = `driver ${JSON.stringify(driver?.engine)}`;
  if (typeof driver?.engine !== "string" || !/^[a-z][a-z0-9-]*$/.test(driver.engine)) {
    throw new TypeError(`${where}: engine must be a lowercase word (letters, digits, -)`);
  }
  if (typeof driver.name !== "string" || driver.name === "") {
    throw new TypeError(`${where}: name must be a non-empty string`);
  }
  if (!Array.isArray(driver.schemes) || driver.schemes.some((s) => !/^[a-z][a-z0-9+.-]*$/.test(s))) {
    throw new TypeError(`${where}: schemes must be lowercase URL schemes without the colon`);
  }
  if (typeof driver.parse !== "function" || typeof driver.open !== "function") {
    throw new TypeError(`${where}: parse and open must be functions`);
  }
  return driver;
}
