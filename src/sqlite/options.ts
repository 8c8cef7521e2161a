import { describe } from "../options/describe.js";
import { checkNumber } from "../options/number-option.js";
import { checkIdentifier } from "./schema.js";

/** The options both SQLite stores share (better-sqlite3's `sqliteStore` and `node:sqlite`'s `nodeSqliteStore`). */
export interface SqliteFileOptions {
  clock?: () => number;
  table?: string;
  busyTimeoutMs?: number;
  synchronous?: "normal" | "full";
}

export interface ResolvedSqliteOptions {
  clock: () => number;
  table: string;
  busyTimeoutMs: number;
  synchronous: "normal" | "full" | undefined;
}

/** Checks and defaults the shared options once, at factory time; errors name the factory and the option. */
export function resolveSqliteOptions(factory: string, options: SqliteFileOptions): ResolvedSqliteOptions {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`${factory}: options must be an object, got ${describe(options)}`);
  }
  const { clock = Date.now, table = "idemkey_records", busyTimeoutMs = 5000, synchronous } = options;
  if (typeof clock !== "function") {
    throw new TypeError(
      `${factory}: options.clock must be a function returning epoch ms, got ${describe(clock)}`,
    );
  }
  checkIdentifier(`${factory}: options.table`, table);
  checkNumber(`${factory}: options.busyTimeoutMs`, busyTimeoutMs, { integer: true });
  if (synchronous !== undefined && synchronous !== "normal" && synchronous !== "full") {
    throw new TypeError(
      `${factory}: options.synchronous must be "normal" or "full", got ${describe(synchronous)}`,
    );
  }
  return { clock, table, busyTimeoutMs, synchronous };
}
