export { sqliteDriver } from "./description.js";
export {
  type EffectOnceLookup,
  type EffectOnceOptions,
  type EffectOnceResult,
  effectOnce,
  effectOnceLookup,
  type SqliteEffectOnceLookup,
  type SqliteEffectOnceOptions,
  type SqliteEffectOnceResult,
} from "./effect-once.js";
export { type SqliteStoreOptions, sqliteStore } from "./store.js";
