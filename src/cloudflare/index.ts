export { type D1StoreOptions, d1Store } from "./d1-store.js";
export { type DurableObjectStoreOptions, durableObjectStore } from "./durable-object-store.js";
export { objectStore, type StoreMethod, type StoreObject, serveStore } from "./object-store.js";
export type { D1DatabaseLike, D1StatementLike, DurableObjectSqlStorage, SqlCursor } from "./storage.js";
