import type { TableVersions } from "./schema.js";

/**
 * Version 1 of the records table. Keys, fingerprints, tokens and the saved texts are bytes, so keys sort bytewise
 * (UTF-8 byte order is code point order, the order every store lists in) with no PAD SPACE collation making "a" and
 * "a " one key; the one layout reads the same on MySQL 8 and MariaDB. Times are epoch milliseconds on the server's
 * clock unless the store has a `clock` option.
 */
export const recordsTable: TableVersions = {
  version: 1,
  create: (table) => `CREATE TABLE IF NOT EXISTS ${table} (
    \`key\` VARBINARY(3072) NOT NULL,
    state VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    fingerprint BLOB NOT NULL,
    token BLOB NULL,
    lease_until BIGINT NULL,
    attempts INT NOT NULL,
    result LONGBLOB NULL,
    data LONGBLOB NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (\`key\`),
    KEY expires_at (expires_at)
  ) ENGINE=InnoDB`,
  columns: [
    ["key", "varbinary"],
    ["state", "varchar"],
    ["fingerprint", "blob"],
    ["token", "blob"],
    ["lease_until", "bigint"],
    ["attempts", "int"],
    ["result", "longblob"],
    ["data", "longblob"],
    ["created_at", "bigint"],
    ["updated_at", "bigint"],
    ["expires_at", "bigint"],
  ],
};
