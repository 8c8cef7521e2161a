export { nodeSqliteDriver } from "./description.js";
export type { DatabaseSync } from "./driver.js";
export { type NodeSqliteStoreOptions, nodeSqliteStore } from "./store.js";
