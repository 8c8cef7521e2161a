import { IdemkeyError } from "../errors/idemkey-error.js";

/**
 * `idemkey inspect --store <url>` cannot open the store the URL names: the URL is malformed or of an unknown kind, a
 * SQLite file does not exist, or the client package for the kind (`better-sqlite3`, `pg`, `ioredis`) is not
 * installed. `url` is the URL as given, with any password masked.
 */
export class StoreUrlError extends IdemkeyError {
  override name = "StoreUrlError" as const;
  readonly url: string;

  constructor(url: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.url = url;
  }
}
