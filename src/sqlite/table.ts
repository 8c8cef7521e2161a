/*
 * The records table, shared by the two SQLite stores (better-sqlite3's `idemkey/sqlite` and `node:sqlite`'s
 * `idemkey/node-sqlite`), so that either can open a file the other wrote. No driver is imported here.
 */

/** Version 1 of the records table; later versions append a migration here and never edit this one. */
export const migrations = (table: string): string[] => [
  `CREATE TABLE ${table} (
    key TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    token TEXT,
    lease_until INTEGER,
    attempts INTEGER NOT NULL,
    result TEXT,
    data TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX ${table}_expires_at ON ${table} (expires_at);`,
  // Version 2: purge walks an index of purge_from, which a claim sets to the record's creation and a completion or a
  // renewal never assigns, so that those write the record's page and no index page (SQLite rewrites an index entry
  // whenever its column is assigned, and version 1 indexed expires_at, which both move): 2 pages a completion, then
  // 1. Older rows get 0, so the first purge looks at each once, in its batches, instead of a migration rewriting
  // every row under the write lock.
  `ALTER TABLE ${table} ADD COLUMN purge_from INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX ${table}_purge_from ON ${table} (purge_from);
  DROP INDEX ${table}_expires_at;`,
];

export const COLUMNS = `key, state, fingerprint, token, lease_until AS leaseUntil, attempts, result, data,
  created_at AS createdAt, updated_at AS updatedAt, expires_at AS expiresAt`;

/** One row per idemkey table in a database file: the table's name and the schema version it is at. */
export const META_TABLE = "idemkey_meta";
