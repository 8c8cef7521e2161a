import { isStoreError } from "../errors/guards.js";

/** System and driver codes that say the server could not be reached at all. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "ECONNRESET",
]);

/**
 * Why a `--store` could not be read when the CLI opened it, in one line: the driver's own words and what to do. A
 * `StoreError`'s advice about a write that "may or may not have been applied" is about a call, not about opening a
 * store, so the driver's error is read instead (PostgreSQL's SQLSTATE, the system error code, ioredis's give-up).
 */
export function openFailure(error: unknown): string {
  const driver = (isStoreError(error) && error.cause !== undefined ? error.cause : error) as
    | { message?: unknown; code?: unknown; name?: unknown }
    | undefined;
  const words = sentence(
    String(driver?.message ?? error)
      .replace(/\s+/g, " ")
      .trim(),
  );
  const code = typeof driver?.code === "string" ? driver.code : undefined;
  // PostgreSQL's SQLSTATE: invalid_catalog_name, invalid_password, invalid_authorization_specification.
  if (code === "3D000")
    return `${words} Create it (createdb, or CREATE DATABASE), or correct the database name in --store.`;
  if (code === "28P01" || code === "28000") return `${words} Check the user and password in --store.`;
  // MySQL's and MariaDB's words for the same two (mysql2's `code`).
  if (code === "ER_BAD_DB_ERROR")
    return `${words} Create it (CREATE DATABASE), or correct the database name in --store.`;
  if (code === "ER_ACCESS_DENIED_ERROR") return `${words} Check the user and password in --store.`;
  // ioredis gives up on a command after maxRetriesPerRequest tries to connect, in words that do not say so.
  if ((code !== undefined && UNREACHABLE.has(code)) || driver?.name === "MaxRetriesPerRequestError") {
    return `cannot connect to the server (${words.replace(/\.$/, "")}). Check that it is running at the address --store names.`;
  }
  return `${words} Check the --store URL and that its server answers, then run again.`;
}

/** `text` ended as a sentence: a period added unless it ends one already. */
function sentence(text: string): string {
  return text === "" || /[.!?]$/.test(text) ? text : `${text}.`;
}
