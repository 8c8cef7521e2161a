import { existsSync } from "node:fs";
import type { OpenedStore, StoreUrlContext, StoreUrlFields } from "../store/driver.js";
import { readFileUrl } from "../store/driver-url.js";
import type { Store } from "../store/types.js";

/*
 * The URL both SQLite drivers read, `sqlite:` (better-sqlite3) and `node-sqlite:` (`node:sqlite`): they name the
 * same file and table, so they parse and open it alike, and only the library that reads the file differs.
 */

/** The query parameters of a SQLite URL. */
export const SQLITE_URL_PARAMS = ["table"];

/** `<scheme>:<path>[?table=]`: the file's absolute path, and the table when the URL names one. */
export function parseSqliteUrl(url: string, context: StoreUrlContext): StoreUrlFields {
  const { path, params } = readFileUrl(url, context, SQLITE_URL_PARAMS);
  return { path, ...params };
}

/**
 * Opens the file a SQLite URL named with `openStore`, the driver's own factory, which imports its store (and so its
 * library) only when it is called.
 */
export async function openSqliteFile(
  fields: StoreUrlFields,
  context: StoreUrlContext & { label: string },
  openStore: (path: string, options: { table?: string }) => Promise<Store>,
): Promise<OpenedStore> {
  const { path = "", table } = fields;
  // Opening a mistyped path would create an empty ledger and show nothing, silently.
  if (!existsSync(path)) context.fail(`: no SQLite file at ${path}`);
  const store = await openStore(path, table === undefined ? {} : { table });
  return { store, label: context.label, close: () => store.close() };
}
