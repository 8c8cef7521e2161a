import { createHash } from "node:crypto";
import { StoreError } from "../errors/store-error.js";
import { keyRange } from "../store/range.js";
import { recentClaims } from "../store/recent-claims.js";
import { decideClaim, resent } from "../store/record.js";
import { sinceMs } from "../store/since.js";
import type {
  Changes,
  ChangesQuery,
  ClaimInput,
  ClaimResult,
  Expect,
  ListQuery,
  RecordState,
  Store,
  StoreOptions,
  StoreRecord,
} from "../store/types.js";
import { checkIdentifier, guard, type Queryable, qualified } from "./client.js";
import { migrate } from "./schema.js";

export interface PostgresStoreOptions extends StoreOptions {
  /**
   * Replaces the server's clock for tests. By default every lease and expiry is decided in SQL on PostgreSQL's own
   * clock (`statement_timestamp()`), so that processes whose clocks disagree still agree on whether a lease lapsed.
   * @default the server's clock
   */
  clock?: () => number;
  /**
   * The table the records live in, created and migrated on first use. The harness ledger and the middleware may
   * share one table, since their keys never collide, or keep one each.
   * @default "idemkey_records"
   */
  table?: string;
  /**
   * The PostgreSQL schema holding the table and idemkey's `idemkey_meta` table. It must exist already: idemkey
   * creates tables, never schemas.
   * @default "public"
   */
  schema?: string;
  /**
   * Sends the store's statements as named prepared statements, which PostgreSQL parses and plans once per
   * connection instead of on every call: a claim of a completed key measured about 1 ms as plain text and 0.2 to
   * 0.5 ms prepared. Needs a client whose `query` takes node-postgres's `{ name, text, values }` form. Turn it off
   * behind a transaction-mode pooler that cannot carry prepared statements (PgBouncer before 1.21, or without
   * `max_prepared_statements`).
   * @default true for a node-postgres `Pool` or `Client`, false for any other client (PGlite, a wrapper)
   */
  preparedStatements?: boolean;
}

/**
 * Version 1 of the records table; later versions append a migration and never edit this one. Keys sort bytewise
 * (`COLLATE "C"`) whatever the database's locale, so listing pages the same everywhere. Times are epoch
 * milliseconds, on the server's clock unless the store has a `clock` option.
 */
const migrations = (table: string, name: string): string[] => [
  `CREATE TABLE ${table} (
    key text COLLATE "C" PRIMARY KEY,
    state text NOT NULL,
    fingerprint text NOT NULL,
    token text,
    lease_until bigint,
    attempts integer NOT NULL,
    result text,
    data text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE INDEX "${name}_expires_at" ON ${table} (expires_at);`,
];

/**
 * The statement's instant in epoch ms: the parameter when the store has a `clock` option (tests), else the server's
 * `statement_timestamp()`, one value for the whole statement, so that every process on the database agrees on
 * whether a lease has lapsed whatever its own clock says.
 */
const serverNow = (param: string) =>
  `COALESCE(${param}::bigint, floor(extract(epoch from statement_timestamp()) * 1000)::bigint)`;

/** The first row of a claim's answer: only its instant, in `created_at`. */
const NOW_ROW = `NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, now, NULL, NULL`;

const COLUMNS = `key, state, fingerprint, token, lease_until, attempts, result, data, created_at, updated_at, expires_at`;

interface Row {
  source?: string;
  key: string;
  state: RecordState;
  fingerprint: string;
  token: string | null;
  lease_until: string | number | bigint | null;
  attempts: number;
  result: string | null;
  data: string | null;
  created_at: string | number | bigint;
  updated_at: string | number | bigint;
  expires_at: string | number | bigint;
  /** The claim's read only: its instant. */
  read_now?: string | number | bigint;
  /** `changes()` only: its instant and live count, on every row. */
  changes_now?: string | number | bigint;
  changes_live?: string | number | bigint;
}

/** bigint columns come back as strings from `pg` (and as numbers or bigints from other clients). */
const toRecord = (row: Row): StoreRecord => ({
  key: row.key,
  state: row.state,
  fingerprint: row.fingerprint,
  token: row.token,
  leaseUntil: row.lease_until === null ? null : Number(row.lease_until),
  attempts: Number(row.attempts),
  result: row.result,
  data: row.data,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
  expiresAt: Number(row.expires_at),
});

/** A claim's input as one row `i`, its parameters as `claimValues` gives them. */
const CLAIM_INPUT = `SELECT $1::text AS key, $2::text AS state, $3::text AS fingerprint, $4::text AS token,
  $5::bigint AS lease_ms, $6::bigint AS ttl_ms, $7::text AS data, ${serverNow("$8")} AS now`;

/** CLAIM_INPUT's parameters, which every claim statement passes. */
const claimValues = (key: string, input: ClaimInput, given: number | null): unknown[] => [
  key,
  input.state ?? "pending",
  input.fingerprint,
  input.token,
  input.leaseMs,
  input.ttlMs,
  input.data ?? null,
  given,
];

/** A new record's columns (COLUMNS order) from the row `i`. */
const NEW_RECORD = `SELECT key, state, fingerprint, token, CASE WHEN state = 'pending' THEN now + lease_ms END, 0, NULL,
  data, now, now, now + ttl_ms`;

/** A claim that lost an insert race sees nothing in its snapshot; the next statement sees the winner. */
const CLAIM_ATTEMPTS = 5;

/**
 * A store in a PostgreSQL table, shared by every process and machine that reaches the database. Each operation is
 * one statement: a claim inserts with `ON CONFLICT DO NOTHING`, or replaces an expired record or takes over an
 * expired lease with an `UPDATE` of the row it has just locked, so two claimants can never both win.
 *
 * Pass the `pg.Pool` you already have (the store never opens or closes connections), or any client with
 * `query(text, values)`, such as PGlite. The table and `idemkey_meta` are created on first use, under an advisory lock.
 *
 * @example
 * const store = postgresStore(new pg.Pool({ connectionString: process.env.DATABASE_URL }));
 */
/**
 * The answer to a claim that meets `record` and leaves it as it is (a replay, a conflict, a key running elsewhere, or
 * this very claim resent), or undefined when the claim must write: the record expired, or its lease lapsed for a
 * takeover by the same request. Both the plain read and claimFast's snapshot decide through it.
 */
function answerAsIs(key: string, record: StoreRecord, input: ClaimInput, now: number) {
  const lapsed =
    record.state === "pending" &&
    record.leaseUntil !== null &&
    record.leaseUntil <= now &&
    record.fingerprint === input.fingerprint;
  if (record.expiresAt <= now || lapsed) return undefined;
  // What stays is answered as the rule says: `exists`, or for this very claim resent, its first answer.
  return decideClaim(key, record, input, now);
}

export function postgresStore(client: Queryable, options: PostgresStoreOptions = {}): Store {
  if (typeof (client as Queryable | null)?.query !== "function") {
    throw new TypeError("postgresStore: client must be a pg.Pool or another client with query(text, values)");
  }
  const { clock, schema, table, preparedStatements } = resolveOptions(options);
  keepAliveOnIdleErrors(client);
  const t = qualified(schema, table);
  let init: Promise<void> | undefined;
  const ready = () => {
    init ??= migrate(client, schema, table, migrations(t, table)).catch((error: unknown) => {
      init = undefined; // a later call tries again, for example once the server is back
      throw error;
    });
    return init;
  };
  const prepared = preparedStatements ?? isNodePostgres(client);
  /** The `now` a statement is given: null lets the server's clock decide; the `clock` option (tests) otherwise. */
  const given = () => (clock ? clock() : null);
  const names = new Map<string, string>();
  const recent = recentClaims();
  const saw = recent.saw;
  const run = async (sql: string, values: unknown[]) => {
    if (!prepared) return (await client.query(sql, values)) as { rows: Row[]; rowCount: number | null };
    // One name per distinct text: the table's name is in the text, so two stores never share a statement.
    let name = names.get(sql);
    if (name === undefined) {
      name = `idemkey_${createHash("sha256").update(sql).digest("hex").slice(0, 24)}`;
      names.set(sql, name);
    }
    const config = { name, text: sql, values };
    return (await (client.query as unknown as (config: object) => Promise<unknown>)(config)) as {
      rows: Row[];
      rowCount: number | null;
    };
  };

  const claimOnce = async (
    key: string,
    input: ClaimInput,
    given: number | null,
  ): Promise<ClaimResult | undefined> => {
    const { rows } = await run(
      `WITH i AS (${CLAIM_INPUT}), cur AS (
         SELECT r.* FROM ${t} r, i WHERE r.key = i.key
       ), old AS (
         -- Only a record this claim may replace is locked: a row lock writes WAL, and a replay of a completed
         -- record would otherwise wait for a WAL flush to commit what is only a read.
         SELECT r.* FROM ${t} r, i WHERE r.key = i.key AND (r.expires_at <= i.now OR (r.state = 'pending'
           AND r.lease_until <= i.now AND r.fingerprint = i.fingerprint)) FOR UPDATE OF r
       ), replaced AS (
         UPDATE ${t} r SET
           state = CASE WHEN old.expires_at <= i.now THEN i.state ELSE r.state END,
           fingerprint = CASE WHEN old.expires_at <= i.now THEN i.fingerprint ELSE r.fingerprint END,
           token = i.token,
           lease_until = CASE WHEN old.expires_at > i.now OR i.state = 'pending' THEN i.now + i.lease_ms END,
           attempts = CASE WHEN old.expires_at <= i.now THEN 0 ELSE r.attempts END,
           result = CASE WHEN old.expires_at <= i.now THEN NULL ELSE r.result END,
           data = CASE WHEN old.expires_at <= i.now THEN i.data ELSE r.data END,
           created_at = CASE WHEN old.expires_at <= i.now THEN i.now ELSE r.created_at END,
           updated_at = i.now,
           expires_at = CASE WHEN old.expires_at <= i.now THEN i.now + i.ttl_ms
                             ELSE greatest(r.expires_at, i.now + i.ttl_ms) END
         FROM old, i
         WHERE r.key = old.key AND (old.expires_at <= i.now OR (old.state = 'pending'
           AND old.lease_until <= i.now AND old.fingerprint = i.fingerprint))
         RETURNING r.*
       ), inserted AS (
         INSERT INTO ${t} (${COLUMNS}) ${NEW_RECORD}
         FROM i WHERE NOT EXISTS (SELECT 1 FROM cur)
         ON CONFLICT (key) DO NOTHING
         RETURNING *
       )
       SELECT 'cur' AS source, ${COLUMNS} FROM cur
       UNION ALL SELECT 'old', ${COLUMNS} FROM old
       UNION ALL SELECT 'replaced', ${COLUMNS} FROM replaced
       UNION ALL SELECT 'inserted', ${COLUMNS} FROM inserted
       UNION ALL SELECT 'now', ${NOW_ROW} FROM i`,
      claimValues(key, input, given),
    );
    const row = (source: string) => rows.find((r) => r.source === source);
    // The instant the statement decided on: the server's clock, or the `clock` option's.
    const now = Number(row("now")!.created_at);
    const inserted = row("inserted");
    if (inserted) return { status: "claimed", record: toRecord(inserted) };
    const old = row("old");
    if (!old) {
      const cur = row("cur");
      if (!cur) return undefined;
      const record = toRecord(cur);
      const live = record.expiresAt > now ? record : undefined;
      // The resend rule: this token already holds the live record, so answer what its first arrival decided.
      if (live?.state === "pending" && live.token === input.token) return resent(live);
      // Replaceable in the snapshot but not once locked: another claim just won it, so look again.
      if (decideClaim(key, live, input, now).status !== "exists") return undefined;
      return { status: "exists", record };
    }
    const previous = toRecord(old);
    const replaced = row("replaced");
    if (!replaced) return { status: "exists", record: previous };
    return previous.expiresAt <= now
      ? { status: "claimed", record: toRecord(replaced) }
      : { status: "taken_over", record: toRecord(replaced), previous };
  };

  /**
   * The common cases in one cheap statement: a new key is inserted (`ON CONFLICT DO NOTHING`, as a hand-written
   * claim would), and a live record that stays as it is (a replay, a conflict, a key running elsewhere) is read
   * from the same snapshot and locks nothing. `undefined` leaves the rest (an expired record to replace, a lapsed
   * lease to take over, an insert race) to `claimOnce`.
   */
  const claimFast = async (key: string, input: ClaimInput, given: number | null) => {
    const { rows } = await run(
      // The insert only when the snapshot has no row: a replay then skips the conflict check (7% of its cost).
      `WITH i AS (${CLAIM_INPUT}), cur AS (
         SELECT ${COLUMNS} FROM ${t} WHERE key = $1
       ), inserted AS (
         INSERT INTO ${t} (${COLUMNS}) ${NEW_RECORD} FROM i WHERE NOT EXISTS (SELECT 1 FROM cur)
         ON CONFLICT (key) DO NOTHING
         RETURNING *
       )
       SELECT 'inserted' AS source, ${COLUMNS} FROM inserted
       UNION ALL SELECT 'cur', ${COLUMNS} FROM cur
       UNION ALL SELECT 'now', ${NOW_ROW} FROM i`,
      claimValues(key, input, given),
    );
    const inserted = rows.find((r) => r.source === "inserted");
    const cur = rows.find((r) => r.source === "cur");
    if (inserted || cur) saw(cur !== undefined);
    if (inserted) return { status: "claimed", record: toRecord(inserted) } as const;
    if (!cur) return undefined;
    const now = Number(rows.find((r) => r.source === "now")!.created_at);
    const record = toRecord(cur);
    return answerAsIs(key, record, input, now);
  };

  /**
   * A new key in the cheapest statement there is, the one a hand-written claim would send: `INSERT ... ON CONFLICT
   * DO NOTHING`, for when no record is expected (the read before found none, or recent claims met none). claimFast,
   * which also reads the row to answer a replay at once, cost a new key ~95 µs more here (1,135 against 1,040 µs
   * p50, side by side). `undefined` when a row is there: the caller reads it.
   */
  const claimNew = async (key: string, input: ClaimInput, given: number | null) => {
    const { rows } = await run(
      `INSERT INTO ${t} (${COLUMNS}) ${NEW_RECORD} FROM (${CLAIM_INPUT}) i ON CONFLICT (key) DO NOTHING
       RETURNING ${COLUMNS}`,
      claimValues(key, input, given),
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    saw(false);
    return { status: "claimed", record: toRecord(row) } as const;
  };

  /**
   * A claim of a key that holds a live record which stays as it is (a replay, a conflict, a key running elsewhere)
   * answered from a plain read, the cheapest statement there is: claimFast's insert, even when it inserts nothing,
   * costs a replay about 15 µs (store.claim 48.6 against 33.7 µs p50 for a bare SELECT of the row, side by side).
   * `found: false` when there is no record; `result` undefined when the claim must write (claimOnce decides).
   */
  const claimRead = async (key: string, input: ClaimInput, given: number | null) => {
    const { rows } = await run(`SELECT ${COLUMNS}, ${serverNow("$2")} AS read_now FROM ${t} WHERE key = $1`, [
      key,
      given,
    ]);
    const row = rows[0];
    saw(row !== undefined);
    if (row === undefined) return { found: false } as const;
    const now = Number(row.read_now);
    const record = toRecord(row);
    return { found: true, result: answerAsIs(key, record, input, now) } as const;
  };

  return {
    claim: (key, input) =>
      guard("claim", key, async () => {
        await ready();
        // Read first while recent claims met records (replays), insert first while they made new ones: the same
        // decision either way, and the order that costs the common case one statement. Read first, a new key
        // pays one more read (+51 µs p50 on 531, measured); insert first, a replay pays the insert (+15 µs), or,
        // while no recent claim met a record, a plain insert before its read.
        const readFirst = recent.readFirst();
        const read = readFirst ? await claimRead(key, input, given()) : ({ found: false } as const);
        if (read.result) return read.result;
        if (!read.found) {
          if (readFirst || recent.none()) {
            // No record is expected: insert it, or read the one that is there after all.
            const claimed = await claimNew(key, input, given());
            if (claimed) return claimed;
            const again = await claimRead(key, input, given());
            if (again.result) return again.result;
          } else {
            // Some recent claims met records: one statement inserts the key or reads the record that is there.
            const fast = await claimFast(key, input, given());
            if (fast) return fast;
          }
        }
        for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
          const result = await claimOnce(key, input, clock ? clock() : null);
          if (result) return result;
        }
        throw new StoreError({ store: "postgres", operation: "claim", key, reason: "contention" });
      }),
    get: (key) =>
      guard("get", key, async () => {
        await ready();
        const { rows } = await run(
          `SELECT ${COLUMNS} FROM ${t} WHERE key = $1 AND expires_at > ${serverNow("$2")}`,
          [key, given()],
        );
        return rows[0] && toRecord(rows[0]);
      }),
    update: (key, expect, patch) =>
      guard("update", key, async () => {
        await ready();
        const values: unknown[] = [key, given()];
        const param = (value: unknown, type: string) => {
          values.push(value);
          return `$${values.length}::${type}`;
        };
        const now = serverNow("$2");
        const sets = [`updated_at = ${now}`];
        if (patch.state !== undefined) sets.push(`state = ${param(patch.state, "text")}`);
        if (patch.token !== undefined) sets.push(`token = ${param(patch.token, "text")}`);
        if (patch.leaseMs !== undefined) {
          sets.push(
            `lease_until = ${patch.leaseMs === null ? "NULL" : `${now} + ${param(patch.leaseMs, "bigint")}`}`,
          );
        }
        if (patch.attempts !== undefined) sets.push(`attempts = ${param(patch.attempts, "integer")}`);
        if (patch.result !== undefined) sets.push(`result = ${param(patch.result, "text")}`);
        if (patch.data !== undefined) sets.push(`data = ${param(patch.data, "text")}`);
        if (patch.ttlMs !== undefined) sets.push(`expires_at = ${now} + ${param(patch.ttlMs, "bigint")}`);
        const { rows } = await run(
          `UPDATE ${t} SET ${sets.join(", ")} WHERE key = $1 AND expires_at > ${now}${conditions(expect, param)}
           RETURNING ${COLUMNS}`,
          values,
        );
        return rows[0] && toRecord(rows[0]);
      }),
    delete: (key, expect) =>
      guard("delete", key, async () => {
        await ready();
        const values: unknown[] = [key, given()];
        const param = (value: unknown, type: string) => {
          values.push(value);
          return `$${values.length}::${type}`;
        };
        const { rowCount } = await run(
          `DELETE FROM ${t} WHERE key = $1 AND expires_at > ${serverNow("$2")}${conditions(expect, param)}`,
          values,
        );
        return (rowCount ?? 0) > 0;
      }),
    list: (query: ListQuery = {}) =>
      guard("list", undefined, async () => {
        await ready();
        const values: unknown[] = [given()];
        const param = (value: unknown, type: string) => {
          values.push(value);
          return `$${values.length}::${type}`;
        };
        let where = `expires_at > ${serverNow("$1")}${keyBounds(query.prefix, query.after, param)}`;
        if (query.state !== undefined) where += ` AND state = ${param(query.state, "text")}`;
        const { rows } = await run(
          `SELECT ${COLUMNS} FROM ${t} WHERE ${where} ORDER BY key LIMIT ${param(query.limit ?? 100, "integer")}`,
          values,
        );
        return rows.map(toRecord);
      }),
    changes: (query: ChangesQuery) =>
      guard("changes", undefined, async () => {
        await ready();
        const values: unknown[] = [given(), sinceMs(query.since), query.limit ?? 100];
        const param = (value: unknown, type: string) => {
          values.push(value);
          return `$${values.length}::${type}`;
        };
        const range = keyBounds(query.prefix, undefined, param);
        // One statement, so one snapshot and one statement_timestamp() for the count, the rows and `now`. Both
        // walk the prefix's range of the primary key, which the planner seeks or, for a prefix that is most of
        // the table, scans: liveness is a FILTER and an IS TRUE, never an index condition, because with
        // `expires_at > now` the planner took the expires_at index and walked every live record of the table
        // (25 ms where the prefix's 10,000 of 110,000 took 6). No index on updated_at: every write would pay for
        // it, and every update would stop being HOT (updated_at changes on each one), for a walk of 5 ms per
        // 10,000 records a watcher makes once a second. The LEFT JOIN keeps the row of `now` and the count when
        // no record changed.
        const { rows } = await run(
          `WITH i AS (SELECT ${serverNow("$1")} AS now),
           c AS (SELECT count(*) FILTER (WHERE expires_at > i.now) AS live FROM ${t}, i WHERE true${range})
           SELECT i.now AS changes_now, c.live AS changes_live, r.* FROM i CROSS JOIN c LEFT JOIN LATERAL (
             SELECT ${COLUMNS} FROM ${t} WHERE (expires_at > i.now) IS TRUE${range} AND updated_at >= $2::bigint
             ORDER BY key LIMIT $3::integer
           ) r ON true
           ORDER BY r.key`,
          values,
        );
        const first = rows[0]!;
        const changes: Changes = {
          records: first.key === null ? [] : rows.map(toRecord),
          live: Number(first.changes_live),
          now: Number(first.changes_now),
        };
        return changes;
      }),
    purge: ({ limit = 1000 } = {}) =>
      guard("purge", undefined, async () => {
        await ready();
        // Bounded, and SKIP LOCKED so that a purge never waits on (or for) a claim replacing an expired row.
        const { rowCount } = await run(
          `DELETE FROM ${t} WHERE key IN (
             SELECT key FROM ${t} WHERE expires_at <= ${serverNow("$1")} LIMIT $2::integer FOR UPDATE SKIP LOCKED)`,
          [given(), limit],
        );
        return rowCount ?? 0;
      }),
    // The pool belongs to the caller, who ends it.
    async close() {},
  };
}

/**
 * The key bounds of `keyRange` as SQL the primary key can seek on, one text per combination of bounds: with
 * `($4::text IS NULL OR key > $4)` a prepared (generic) plan cannot use the bound at all. `starts_with` keeps the
 * test exact where no bound could be derived (a prefix with a lone surrogate).
 */
function keyBounds(
  prefix: string | undefined,
  after: string | undefined,
  param: (value: unknown, type: string) => string,
): string {
  const { lower, upper } = keyRange(prefix, after);
  let sql = "";
  if (lower) sql += ` AND key ${lower.inclusive ? ">=" : ">"} ${param(lower.key, "text")}`;
  if (upper !== undefined) sql += ` AND key < ${param(upper, "text")}`;
  if (prefix !== undefined && prefix !== "") sql += ` AND starts_with(key, ${param(prefix, "text")})`;
  return sql;
}

function conditions(expect: Expect, param: (value: unknown, type: string) => string): string {
  let sql = "";
  if (expect.token !== undefined) sql += ` AND token = ${param(expect.token, "text")}`;
  if (expect.state !== undefined) sql += ` AND state = ${param(expect.state, "text")}`;
  return sql;
}

/**
 * A `pg.Pool` emits `'error'` when an idle connection dies (a server restart, a terminated backend); with no
 * listener, Node turns that into an uncaught exception that ends the process. The store's own calls fail with a
 * `StoreError` and the pool reconnects, so an idle connection's death is only worth a warning. Attached only when
 * the application has no listener of its own.
 */
function keepAliveOnIdleErrors(client: Queryable): void {
  const emitter = client as Partial<{
    on(event: "error", listener: (error: Error) => void): unknown;
    listenerCount(event: string): number;
  }>;
  if (typeof emitter.on !== "function" || typeof emitter.listenerCount !== "function") return;
  if (emitter.listenerCount("error") > 0) return;
  emitter.on("error", (error: Error) => {
    process.emitWarning(
      `idemkey/postgres: an idle connection of the pool failed (${error.message}); the pool replaces it. Add ` +
        "pool.on('error', ...) to handle this yourself.",
      "IdemkeyWarning",
    );
  });
}

/** node-postgres's `Pool` and `Client` take the `{ name, text, values }` form; PGlite and other clients may not. */
function isNodePostgres(client: Queryable): boolean {
  const c = client as { totalCount?: unknown; connectionParameters?: unknown };
  return (
    typeof c.totalCount === "number" ||
    (typeof c.connectionParameters === "object" && c.connectionParameters !== null)
  );
}

function resolveOptions(options: PostgresStoreOptions) {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("postgresStore: options must be an object");
  }
  const { clock, table = "idemkey_records", schema = "public", preparedStatements } = options;
  if (preparedStatements !== undefined && typeof preparedStatements !== "boolean") {
    throw new TypeError(
      `postgresStore: options.preparedStatements must be a boolean, got ${typeof preparedStatements}`,
    );
  }
  if (clock !== undefined && typeof clock !== "function") {
    throw new TypeError(
      `postgresStore: options.clock must be a function returning epoch ms, got ${typeof clock}`,
    );
  }
  checkIdentifier("postgresStore: options.table", table);
  checkIdentifier("postgresStore: options.schema", schema);
  return { clock, table, schema, preparedStatements };
}
