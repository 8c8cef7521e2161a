import { IdemkeyError } from "./idemkey-error.js";

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

  constructor(store: string, location: string, found: number, supported: number, options?: ErrorOptions) {
    const what =
      found < supported
        ? `an older idemkey's records (layout ${found}); this idemkey reads layout ${supported}. Let the version ` +
          `that wrote them finish and delete their keys, or configure another prefix`
        : `records of layout ${found}, newer than the layout ${supported} this idemkey reads: upgrade idemkey ` +
          `here, or configure another prefix`;
    super(`${store} store at ${JSON.stringify(location)} holds ${what}`, options);
    this.store = store;
    this.location = location;
    this.found = found;
    this.supported = supported;
  }
}
