export { type DurableObjectStoreOptions, durableObjectStore } from "./durable-object-store.js";
export type { DurableObjectSqlStorage, SqlCursor } from "./storage.js";
