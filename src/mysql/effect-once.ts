import { IdempotencyConflictError } from "../errors/idempotency-conflict-error.js";
import { StoreError } from "../errors/store-error.js";
import { oncePerPool } from "../store/once-per-pool.js";
import {
  checkIdentifier,
  ER,
  errno,
  guardOnce,
  isDecidedRollback,
  type MysqlConnectionLike,
  quoted,
} from "./client.js";
import { bytes, MAX_KEY_BYTES } from "./records.js";
import { migrate, type TableVersions } from "./schema.js";

export interface MysqlEffectOnceOptions {
  /** The idempotency key: the one an agent's harness derived and forwarded, or a client's `Idempotency-Key`. */
  key: string;
  /**
   * What the key was used for (a hash of the request). A later call with the same key and another fingerprint is a
   * conflict, not a replay; giving none on the first call and one later (or the reverse) counts as different.
   * @default undefined (no fingerprint)
   */
  fingerprint?: string;
  /**
   * The table that records used keys and their results, created on first use in the connection's database, next to
   * your own tables. Rows are never deleted by idemkey: they are as durable as the effects they stand for.
   * @default "idemkey_effects"
   */
  table?: string;
}

export interface MysqlEffectOnceResult<T> {
  /** The effect's return value the first time; its JSON round-trip (`JSON.parse(JSON.stringify(x))`) on a replay. */
  result: T;
  /** `true` when the key had been used before and the effect did not run now. */
  replayed: boolean;
}

/** Version 1 of the keys table: keys as bytes (no collation folds two keys into one), results as JSON text bytes. */
export const effectsTable: TableVersions = {
  version: 1,
  create: (table) => `CREATE TABLE IF NOT EXISTS ${table} (
    \`key\` VARBINARY(3072) NOT NULL PRIMARY KEY,
    fingerprint BLOB NULL,
    result LONGBLOB NULL,
    created_at BIGINT NOT NULL
  ) ENGINE=InnoDB`,
  columns: [
    ["key", "varbinary"],
    ["fingerprint", "blob"],
    ["result", "longblob"],
    ["created_at", "bigint"],
  ],
};

/** Per pool, the tables already checked (or being checked), so that each is migrated once per process. */
const migrated = oncePerPool();

/** How often the key's insert runs again when the server rolls it back (a deadlock between inserts of one key). */
const INSERT_ATTEMPTS = 8;

/**
 * Runs `effect` at most once per key, for an owner whose side effect is a write to its own MySQL or MariaDB
 * database. On one connection checked out of `pool`: `START TRANSACTION`, insert the key, run `effect(connection)`
 * in that same transaction, save its JSON result, `COMMIT`. The effect's writes and the key commit together or not
 * at all. A concurrent duplicate waits on the key's primary key until the first commits, then gets the saved result;
 * if the first rolls back, the duplicate runs the effect instead.
 *
 * The effect must do its writes through the `connection` it receives (another connection is another transaction) and
 * return something `JSON.stringify` accepts. If it throws, everything rolls back and its error propagates, a deadlock
 * in its own statements included (calling again then runs it). A deadlock on the key's insert, before the effect
 * runs, is the server's decided rollback and is retried here. If the connection fails, a `StoreError` says so; the
 * transaction then either committed whole or not at all, so calling again with the same key is always right: it
 * replays or runs. Never give it DDL to run: MySQL commits a transaction implicitly before a `CREATE` or `ALTER`.
 *
 * @example
 * const { result, replayed } = await effectOnce(pool, { key, fingerprint }, async (connection) => {
 *   const [header] = await connection.query("INSERT INTO orders (sku, qty) VALUES (?, ?)", [sku, qty]);
 *   return (header as ResultSetHeader).insertId;
 * });
 */
export async function effectOnce<C extends MysqlConnectionLike, T>(
  pool: { getConnection(): Promise<C> },
  options: MysqlEffectOnceOptions,
  effect: (connection: C) => T | Promise<T>,
): Promise<MysqlEffectOnceResult<Awaited<T>>> {
  const { key, fingerprint, table } = checkOptions(pool, options, effect);
  const t = quoted(table);
  const connection = await guardOnce("effectOnce", key, () => pool.getConnection());
  let broken = false;
  let open = false;
  const rollback = async () => {
    if (!open) return;
    open = false;
    await connection.query("ROLLBACK").catch(() => {
      broken = true;
    });
  };
  const fail = (error: unknown) => {
    if ((error as { fatal?: unknown } | null)?.fatal === true) broken = true;
  };
  try {
    await guardOnce("effectOnce", key, () =>
      migrated(pool, table, () => migrate(connection, table, effectsTable)),
    );
    // The key first, in its own transaction: retried while the server says it rolled the insert back.
    let inserted = false;
    for (let attempt = 1; ; attempt++) {
      try {
        await guardOnce("effectOnce", key, async () => {
          await connection.query("START TRANSACTION");
          open = true;
          try {
            await connection.query(`INSERT INTO ${t} (\`key\`, fingerprint, created_at) VALUES (?, ?, ?)`, [
              bytes(key),
              fingerprint === null ? null : bytes(fingerprint),
              Date.now(),
            ]);
            inserted = true;
          } catch (error) {
            if (errno(error) !== ER.DUP_ENTRY) throw error;
          }
        });
        break;
      } catch (error) {
        const cause = (error as { cause?: unknown }).cause;
        fail(cause);
        await rollback();
        if (!isDecidedRollback(cause) || attempt >= INSERT_ATTEMPTS) throw error;
      }
    }
    if (!inserted) {
      // Used before, and committed: read it with a locking read, which sees the latest commit whatever the isolation.
      const [rows] = (await guardOnce("effectOnce", key, () =>
        connection.query(`SELECT fingerprint, result FROM ${t} WHERE \`key\` = ? LOCK IN SHARE MODE`, [
          bytes(key),
        ]),
      )) as [{ fingerprint: Buffer | null; result: Buffer | null }[], unknown];
      await rollback(); // nothing was written
      const row = rows[0]!;
      if ((row.fingerprint === null ? null : String(row.fingerprint)) !== fingerprint) {
        throw new IdempotencyConflictError({ key });
      }
      return { result: row.result === null ? undefined : JSON.parse(String(row.result)), replayed: true };
    }
    let result: Awaited<T>;
    try {
      result = await effect(connection);
    } catch (error) {
      fail(error);
      await rollback();
      if (broken) throw lost(key, "while the effect ran; nothing was committed", error);
      throw error;
    }
    const json = JSON.stringify(result) ?? null;
    await guardOnce("effectOnce", key, () =>
      connection.query(`UPDATE ${t} SET result = ? WHERE \`key\` = ?`, [
        json === null ? null : bytes(json),
        bytes(key),
      ]),
    ).catch((error: unknown) => {
      fail((error as { cause?: unknown }).cause);
      throw error;
    });
    try {
      open = false;
      await connection.query("COMMIT");
    } catch (error) {
      broken = true;
      throw lost(key, "during COMMIT; the effect and the key were committed together or not at all", error);
    }
    return { result, replayed: false };
  } catch (error) {
    await rollback();
    throw error;
  } finally {
    // A connection that failed goes away rather than back into the pool.
    if (broken && typeof connection.destroy === "function") connection.destroy();
    else connection.release();
  }
}

function lost(key: string, what: string, cause: unknown): StoreError {
  return new StoreError({
    store: "mysql",
    operation: "effectOnce",
    key,
    reason: "connection-lost",
    during: what,
    server: "MySQL",
    cause,
  });
}

function checkOptions(pool: unknown, options: MysqlEffectOnceOptions, effect: unknown) {
  if (typeof (pool as { getConnection?: unknown } | null)?.getConnection !== "function") {
    throw new TypeError(
      "effectOnce: pool must be a mysql2/promise Pool (or another pool with getConnection())",
    );
  }
  if (typeof options !== "object" || options === null)
    throw new TypeError("effectOnce: options must be an object");
  const { key, fingerprint = null, table = "idemkey_effects" } = options;
  if (typeof key !== "string" || key === "") {
    throw new TypeError(`effectOnce: options.key must be a non-empty string, got ${JSON.stringify(key)}`);
  }
  if (Buffer.byteLength(key, "utf8") > MAX_KEY_BYTES) {
    throw new TypeError(`effectOnce: options.key is at most ${MAX_KEY_BYTES} bytes in UTF-8`);
  }
  if (fingerprint !== null && typeof fingerprint !== "string") {
    throw new TypeError(`effectOnce: options.fingerprint must be a string, got ${typeof fingerprint}`);
  }
  checkIdentifier("effectOnce: options.table", table);
  if (typeof effect !== "function") throw new TypeError("effectOnce: effect must be a function");
  return { key, fingerprint, table };
}
