import { defineDriver } from "../store/driver.js";
import { openSqliteFile, parseSqliteUrl, SQLITE_URL_PARAMS } from "./url.js";

/** `sqlite:<path>[?table=]`: a SQLite file through better-sqlite3. */
export const sqliteDriver = defineDriver({
  engine: "sqlite",
  name: "SQLite",
  schemes: ["sqlite"],
  example: "sqlite:<path>",
  params: SQLITE_URL_PARAMS,
  peers: [{ package: "better-sqlite3", range: "^12.0.0 || ^13.0.0" }],
  parse: parseSqliteUrl,
  open(fields, context) {
    return openSqliteFile(fields, context, async (path, options) => {
      // store.js imports better-sqlite3 itself, through importPeer: only now, and only for this kind.
      const { sqliteStore } = await import("./store.js");
      return sqliteStore(path, options);
    });
  },
});
