export type { AsyncSqlConnection, SqlRow, SqlStatement, SqlValue } from "./connection.js";
export type { SqliteAsyncOptions } from "./options.js";
export { type SqliteAsyncSettings, sqliteAsyncStore } from "./store.js";
