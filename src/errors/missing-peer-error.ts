import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import type { RetryHints } from "./retry-hints.js";

/**
 * A subpath was imported whose optional peer dependency is not installed: `idemkey/sqlite` without
 * `better-sqlite3`, say. The message names the package, the range idemkey supports and the command to run.
 */
export class MissingPeerError extends IdemkeyError implements RetryHints {
  override name = "MissingPeerError" as const;
  /** The subpath imported: `"idemkey/sqlite"`. */
  readonly subpath: string;
  /** The package to install: `"better-sqlite3"`. */
  readonly package: string;
  /** The versions idemkey supports, from its peerDependencies: `"^12 || ^13"`. */
  readonly range: string;
  readonly retryable = false;

  constructor(subpath: string, pkg: string, range: string, options?: ErrorOptions) {
    super(`${subpath} needs ${pkg} ${range}: npm install ${pkg}`, options);
    this.subpath = subpath;
    this.package = pkg;
    this.range = range;
  }
}
brand(MissingPeerError, "MissingPeerError");
