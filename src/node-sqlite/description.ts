import { existsSync } from "node:fs";
import { defineDriver } from "../store/driver.js";
import { readFileUrl } from "../store/driver-url.js";

const PARAMS = ["table"];

/** `node-sqlite:<path>[?table=]`: the same SQLite file and table as `sqlite:`, through Node.js's `node:sqlite`. */
export const nodeSqliteDriver = defineDriver({
  engine: "node-sqlite",
  name: "SQLite",
  schemes: ["node-sqlite"],
  example: "node-sqlite:<path>",
  params: PARAMS,
  // Built into Node.js 22.13 and later: nothing to install.
  peers: [],
  parse(url, context) {
    const { path, params } = readFileUrl(url, context, PARAMS);
    return { path, ...params };
  },
  async open(fields, context) {
    const { path = "", table } = fields;
    if (!existsSync(path)) context.fail(`: no SQLite file at ${path}`);
    const { nodeSqliteStore } = await import("./store.js");
    const store = nodeSqliteStore(path, table === undefined ? {} : { table });
    return { store, label: context.label, close: () => store.close() };
  },
});
