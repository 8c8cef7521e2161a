import { describe } from "../options/describe.js";
import { checkNumber } from "../options/number-option.js";
import { checkIdentifier } from "../store/identifier.js";

/** The options every store on the async SQLite records takes (libSQL's `libsqlStore`, Cloudflare's `d1Store`). */
export interface SqliteAsyncOptions {
  /**
   * The clock every expiry and lease is measured with. The caller's clock, as in the SQLite stores: a remote
   * libSQL server or D1 is given the instant with each statement, so callers sharing a database should keep their
   * clocks in step (see docs/claim-protocol.md, "clock").
   * @default Date.now
   */
  clock?: () => number;
  /**
   * The table the records live in, created on first use: the same table, columns and encoding as `sqliteStore`'s,
   * so either store reads a file the other wrote.
   * @default "idemkey_records"
   */
  table?: string;
  /**
   * How long, in milliseconds, an operation that meets another connection's lock (SQLITE_BUSY, a local file shared
   * by several processes) is sent again, after asynchronous pauses, before it fails with a `StoreError`. No wait is
   * ever synchronous.
   * @default 5000
   */
  busyTimeoutMs?: number;
}

export interface ResolvedSqliteAsyncOptions {
  clock: () => number;
  table: string;
  busyTimeoutMs: number;
}

/** Checks and defaults the options once, at factory time, on a copy; a `TypeError` names the factory and the option. */
export function resolveSqliteAsyncOptions(factory: string, options: unknown): ResolvedSqliteAsyncOptions {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`${factory}: options must be an object, got ${describe(options)}`);
  }
  const { clock = Date.now, table = "idemkey_records", busyTimeoutMs = 5000 } = options as SqliteAsyncOptions;
  if (typeof clock !== "function") {
    throw new TypeError(
      `${factory}: options.clock must be a function returning epoch ms, got ${describe(clock)}`,
    );
  }
  checkIdentifier(`${factory}: options.table`, table);
  checkNumber(`${factory}: options.busyTimeoutMs`, busyTimeoutMs, { integer: true });
  return { clock, table, busyTimeoutMs };
}
