import { IdempotencyConflictError } from "../errors/idempotency-conflict-error.js";
import { StoreError } from "../errors/store-error.js";
import { oncePerPool } from "../store/once-per-pool.js";
import { checkIdentifier, guard, type PoolClientLike, qualified } from "./client.js";
import { migrate } from "./schema.js";

export interface PostgresEffectOnceOptions {
  /** The idempotency key: the one an agent's harness derived and forwarded, or a client's `Idempotency-Key`. */
  key: string;
  /**
   * What the key was used for (a hash of the request). A later call with the same key and another fingerprint is a
   * conflict, not a replay; giving none on the first call and one later (or the reverse) counts as different.
   * @default undefined (no fingerprint)
   */
  fingerprint?: string;
  /**
   * The table that records used keys and their results, created on first use next to your own tables. Rows are
   * never deleted by idemkey: they are as durable as the effects they stand for.
   * @default "idemkey_effects"
   */
  table?: string;
  /**
   * The PostgreSQL schema of that table (it must exist).
   * @default "public"
   */
  schema?: string;
}

export interface PostgresEffectOnceResult<T> {
  /** The effect's return value the first time; its JSON round-trip (`JSON.parse(JSON.stringify(x))`) on a replay. */
  result: T;
  /** `true` when the key had been used before and the effect did not run now. */
  replayed: boolean;
}

const migrations = (table: string): string[] => [
  `CREATE TABLE ${table} (
    key text PRIMARY KEY,
    fingerprint text,
    result text,
    created_at bigint NOT NULL
  );`,
];

/** Per pool, the tables already migrated (or being migrated), so that each is checked once per process. */
const migrated = oncePerPool();

/**
 * Runs `effect` at most once per key, for an owner whose side effect is a write to its own PostgreSQL database. On
 * one connection checked out of `pool`: `BEGIN`, insert the key with `ON CONFLICT (key) DO NOTHING RETURNING`, run
 * `effect(client)` in that same transaction, save its JSON result, `COMMIT`. The effect's writes and the key commit
 * together or not at all. A concurrent duplicate blocks on the key's unique index until the first commits, then
 * gets the saved result; if the first rolls back, the duplicate runs the effect instead.
 *
 * Prefer it to an `Idempotency-Key` middleware whenever the effect lives in the same database as the key: the
 * middleware keeps the key in a store beside the effect, so a crash between the effect and the saved response leaves
 * an outcome nobody can know; one transaction closes that window completely. Use the middleware for effects that
 * leave the database (an email, a payment API), and this helper for the rows you own.
 *
 * The effect must do its writes through the `client` it receives (another connection is another transaction) and
 * return something `JSON.stringify` accepts. If it throws, everything rolls back and its error propagates. If the
 * connection fails, a `StoreError` says so; the transaction then either committed whole or not at all, so calling
 * again with the same key is always right: it replays or runs. Annotate the effect's parameter (`client:
 * pg.PoolClient`) to get the driver's own types: TypeScript cannot infer through `pg.Pool#connect`'s overloads.
 *
 * @example
 * const { result, replayed } = await effectOnce(pool, { key, fingerprint }, async (client: pg.PoolClient) => {
 *   const { rows } = await client.query("INSERT INTO orders (sku, qty) VALUES ($1, $2) RETURNING id", [sku, qty]);
 *   return rows[0].id;
 * });
 */
export async function effectOnce<C extends PoolClientLike, T>(
  pool: { connect(): Promise<C> },
  options: PostgresEffectOnceOptions,
  effect: (client: C) => T | Promise<T>,
): Promise<PostgresEffectOnceResult<Awaited<T>>> {
  const { key, fingerprint, schema, table } = checkOptions(pool, options, effect);
  const t = qualified(schema, table);
  const client = await guard("effectOnce", key, () => pool.connect());
  let broken: Error | undefined;
  // A pg client whose connection drops while checked out also emits "error", which would crash the process unheard.
  const events = client as Partial<EventSource>;
  const onError = (error: Error) => {
    broken ??= error;
  };
  events.on?.("error", onError);
  let open = false;
  const rollback = async () => {
    if (!open) return;
    open = false;
    await client.query("ROLLBACK").catch((error: Error) => {
      broken = error;
    });
  };
  try {
    await guard("effectOnce", key, async () => {
      await migrated(pool, t, () => migrate(client, schema, table, migrations(t)));
      await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
      open = true;
    });
    const inserted = await guard("effectOnce", key, () =>
      client.query(
        `INSERT INTO ${t} (key, fingerprint, created_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING RETURNING key`,
        [key, fingerprint, Date.now()],
      ),
    );
    if (inserted.rowCount === 0) {
      const { rows } = await guard("effectOnce", key, () =>
        client.query(`SELECT fingerprint, result FROM ${t} WHERE key = $1`, [key]),
      );
      await rollback(); // nothing was written
      const row = rows[0] as { fingerprint: string | null; result: string | null };
      if (row.fingerprint !== fingerprint) {
        throw new IdempotencyConflictError({ key });
      }
      return { result: row.result === null ? undefined : JSON.parse(row.result), replayed: true };
    }
    let result: Awaited<T>;
    try {
      result = await effect(client);
    } catch (error) {
      await rollback();
      if (broken) throw lost(key, "while the effect ran; nothing was committed", error);
      throw error;
    }
    const json = JSON.stringify(result) ?? null;
    await guard("effectOnce", key, () =>
      client.query(`UPDATE ${t} SET result = $2 WHERE key = $1`, [key, json]),
    );
    try {
      await client.query("COMMIT");
      open = false;
    } catch (error) {
      open = false;
      broken = error as Error;
      throw lost(key, "during COMMIT; the effect and the key were committed together or not at all", error);
    }
    return { result, replayed: false };
  } catch (error) {
    await rollback();
    throw error;
  } finally {
    // A connection that failed goes away rather than back into the pool, which listens for its errors from then on.
    client.release(broken);
    events.removeListener?.("error", onError);
  }
}

interface EventSource {
  on(event: "error", listener: (error: Error) => void): unknown;
  removeListener(event: "error", listener: (error: Error) => void): unknown;
}

function lost(key: string, what: string, cause: unknown): StoreError {
  return new StoreError({
    store: "postgres",
    operation: "effectOnce",
    key,
    reason: "connection-lost",
    during: what,
    server: "PostgreSQL",
    cause,
  });
}

function checkOptions(pool: unknown, options: PostgresEffectOnceOptions, effect: unknown) {
  if (typeof (pool as { connect?: unknown } | null)?.connect !== "function") {
    throw new TypeError("effectOnce: pool must be a pg.Pool (or another pool with connect())");
  }
  if (typeof options !== "object" || options === null)
    throw new TypeError("effectOnce: options must be an object");
  const { key, fingerprint = null, table = "idemkey_effects", schema = "public" } = options;
  if (typeof key !== "string" || key === "") {
    throw new TypeError(`effectOnce: options.key must be a non-empty string, got ${JSON.stringify(key)}`);
  }
  if (fingerprint !== null && typeof fingerprint !== "string") {
    throw new TypeError(`effectOnce: options.fingerprint must be a string, got ${typeof fingerprint}`);
  }
  checkIdentifier("effectOnce: options.table", table);
  checkIdentifier("effectOnce: options.schema", schema);
  if (typeof effect !== "function") throw new TypeError("effectOnce: effect must be a function");
  return { key, fingerprint, table, schema };
}
