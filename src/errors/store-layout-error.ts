import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";

/** What a `StoreLayoutError` is made from. */
export interface StoreLayoutErrorData extends ErrorOptions {
  /** The engine: `"redis"`. */
  store: string;
  /** Where the records live (for Redis, the key prefix). */
  location: string;
  /** The layout found there. */
  found: number;
  /** The layout this idemkey reads and writes. */
  supported: number;
  /**
   * When the layout found is this same version's under another setting, the setting that writes it, as the user
   * would type it (`"indexes: false"`): then neither version is older, and the message says to open the store the
   * same way instead of to upgrade or delete.
   */
  option?: string;
  /**
   * What is wrong, in words, when the layout found is not one of idemkey's versions at all (a DynamoDB table keyed on
   * other attributes): the message then says this instead of naming versions.
   */
  problem?: string;
}

type Positional = [string, string, number, number, ErrorOptions?];

/**
 * A key-value store holds records in a layout this idemkey does not read: written by an older version (which kept
 * them another way) or a newer one. Reading them anyway would misread them, so the store refuses: drain or delete the
 * old records, upgrade idemkey, or give this store another prefix.
 */
export class StoreLayoutError extends IdemkeyError {
  override name = "StoreLayoutError" as const;
  /** The engine: `"redis"`. */
  readonly store: string;
  /** Where the records live (for Redis, the key prefix). */
  readonly location: string;
  /** The layout found there. */
  readonly found: number;
  /** The layout this idemkey reads and writes. */
  readonly supported: number;
  /** The setting that writes the layout found, when it is this version's under another setting. */
  readonly option: string | undefined;

  constructor(data: StoreLayoutErrorData);
  /** @deprecated Pass one object: `new StoreLayoutError({ store, location, found, supported, cause })`. */
  constructor(store: string, location: string, found: number, supported: number, options?: ErrorOptions);
  constructor(...args: [StoreLayoutErrorData] | Positional) {
    const data = typeof args[0] === "object" ? args[0] : fromPositional(args as Positional);
    const { store, location, found, supported, option, problem } = data;
    const what =
      problem !== undefined
        ? problem
        : option !== undefined
          ? `records of layout ${found}, which a store opened with ${option} writes; this one reads layout ` +
            `${supported}. Open it as the records were written, or configure another prefix`
          : found < supported
            ? `an older idemkey's records (layout ${found}); this idemkey reads layout ${supported}. Let the version ` +
              `that wrote them finish and delete their keys, or configure another prefix`
            : `records of layout ${found}, newer than the layout ${supported} this idemkey reads: upgrade idemkey ` +
              `here, or configure another prefix`;
    super(
      `${store} store at ${JSON.stringify(location)} ${problem !== undefined ? what : `holds ${what}`}`,
      "cause" in data ? { cause: data.cause } : undefined,
    );
    this.store = store;
    this.location = location;
    this.found = found;
    this.supported = supported;
    this.option = option;
  }
}
brand(StoreLayoutError, "StoreLayoutError");

function fromPositional([store, location, found, supported, options]: Positional): StoreLayoutErrorData {
  return { ...options, store, location, found, supported };
}
