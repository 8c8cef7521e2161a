import type { StoreOptions } from "../store/types.js";
import { checkIdentifier } from "./client.js";

export interface MysqlStoreOptions extends StoreOptions {
  /**
   * Replaces the server's clock for tests. By default every lease and expiry is decided in SQL on the server's own
   * clock (`UTC_TIMESTAMP(6)`), so that processes whose clocks disagree still agree on whether a lease lapsed.
   * @default the server's clock
   */
  clock?: () => number;
  /**
   * The table the records live in, in the pool's database, created on first use (with `idemkey_meta`, which
   * records its schema version). The harness ledger and the middleware may share one table, since their keys never
   * collide, or keep one each.
   * @default "idemkey_records"
   */
  table?: string;
}

export function resolveOptions(options: MysqlStoreOptions) {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("mysqlStore: options must be an object");
  }
  const { clock, table = "idemkey_records" } = options;
  if (clock !== undefined && typeof clock !== "function") {
    throw new TypeError(
      `mysqlStore: options.clock must be a function returning epoch ms, got ${typeof clock}`,
    );
  }
  checkIdentifier("mysqlStore: options.table", table);
  return { clock, table };
}
