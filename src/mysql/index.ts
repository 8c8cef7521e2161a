export type { MysqlConnectionLike, MysqlPoolLike, MysqlQueryable } from "./client.js";
export { mysqlDriver } from "./description.js";
export { effectOnce, type MysqlEffectOnceOptions, type MysqlEffectOnceResult } from "./effect-once.js";
export { type EffectOnceLookup, effectOnceLookup } from "./effect-once-lookup.js";
export { type MysqlStoreOptions, mysqlStore } from "./store.js";
