export type { MysqlConnectionLike, MysqlPoolLike, MysqlQueryable } from "./client.js";
export { mysqlDriver } from "./description.js";
export { type MysqlStoreOptions, mysqlStore } from "./store.js";
