export type { LibsqlClient, LibsqlStatement } from "./client.js";
export { type LibsqlStoreOptions, libsqlStore } from "./store.js";
