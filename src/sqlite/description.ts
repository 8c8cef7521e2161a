import { existsSync } from "node:fs";
import { defineDriver } from "../store/driver.js";
import { readFileUrl } from "../store/driver-url.js";

const PARAMS = ["table"];

/** `sqlite:<path>[?table=]`: a SQLite file through better-sqlite3. */
export const sqliteDriver = defineDriver({
  engine: "sqlite",
  name: "SQLite",
  schemes: ["sqlite"],
  example: "sqlite:<path>",
  params: PARAMS,
  peers: [{ package: "better-sqlite3", range: "^12.0.0 || ^13.0.0" }],
  parse(url, context) {
    const { path, params } = readFileUrl(url, context, PARAMS);
    return { path, ...params };
  },
  async open(fields, context) {
    const { path = "", table } = fields;
    // Opening a mistyped path would create an empty ledger and show nothing, silently.
    if (!existsSync(path)) context.fail(`: no SQLite file at ${path}`);
    // store.js imports better-sqlite3 itself, through importPeer: only now, and only for this kind.
    const { sqliteStore } = await import("./store.js");
    const store = sqliteStore(path, table === undefined ? {} : { table });
    return { store, label: context.label, close: () => store.close() };
  },
});
