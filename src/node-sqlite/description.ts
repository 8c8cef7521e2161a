import { openSqliteFile, parseSqliteUrl, SQLITE_URL_PARAMS } from "../sqlite/url.js";
import { defineDriver } from "../store/driver.js";

/** `node-sqlite:<path>[?table=]`: the same SQLite file and table as `sqlite:`, through Node.js's `node:sqlite`. */
export const nodeSqliteDriver = defineDriver({
  engine: "node-sqlite",
  name: "SQLite",
  schemes: ["node-sqlite"],
  example: "node-sqlite:<path>",
  params: SQLITE_URL_PARAMS,
  // Built into Node.js 22.13 and later: nothing to install.
  peers: [],
  parse: parseSqliteUrl,
  open(fields, context) {
    return openSqliteFile(fields, context, async (path, options) => {
      const { nodeSqliteStore } = await import("./store.js");
      return nodeSqliteStore(path, options);
    });
  },
});
