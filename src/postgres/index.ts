export type { PoolClientLike, PoolLike, Queryable } from "./client.js";
export { postgresDriver } from "./description.js";
export { effectOnce, type PostgresEffectOnceOptions, type PostgresEffectOnceResult } from "./effect-once.js";
export {
  type EffectOnceLookup,
  effectOnceLookup,
  type PostgresEffectOnceLookup,
} from "./effect-once-lookup.js";
export { type PostgresStoreOptions, postgresStore } from "./store.js";
