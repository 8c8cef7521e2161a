export { type EffectOnceOptions, type EffectOnceResult, effectOnce } from "./effect-once.js";
export { type SqliteStoreOptions, sqliteStore } from "./store.js";
