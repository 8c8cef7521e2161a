export { type DurableObjectStoreOptions, durableObjectStore } from "./durable-object-store.js";
export { objectStore, type StoreMethod, type StoreObject, serveStore } from "./object-store.js";
export type { DurableObjectSqlStorage, SqlCursor } from "./storage.js";
