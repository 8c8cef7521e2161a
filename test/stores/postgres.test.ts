import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { SchemaVersionError } from "../../src/errors/index.js";
import { postgresStore } from "../../src/postgres/index.js";
import { postgresService } from "../support/services.js";
import { testStore, testStoreAcrossProcesses } from "./contract.js";

const service = await postgresService();
const suffix = randomBytes(4).toString("hex");
const table = `idemkey_test_${suffix}`;
const schema = `idemkey_test_schema_${suffix}`;
const pool = new pg.Pool({ connectionString: service.url, max: 8 });
const single = new pg.Client({ connectionString: service.url });
/** The tables of the processes' suite, one a test, dropped with the others. */
const processTables: string[] = [];
if (!service.skip) await single.connect();

afterAll(async () => {
  if (!service.skip) {
    await single.end();
    await pool.query(
      `DROP TABLE IF EXISTS "${table}", "${table}_client", "${table}_race", "${table}_new", "${table}_plan"`,
    );
    for (const name of processTables) await pool.query(`DROP TABLE IF EXISTS "${name}"`);
    await pool.query(`DELETE FROM idemkey_meta WHERE name LIKE $1`, [`${table}%`]);
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
  await pool.end();
});

testStore("postgres (pg.Pool)", (clock) => postgresStore(pool, { clock, table }), { skip: service.skip });
// Any client with query(text, values) fits; this one runs one query at a time on one connection, as PGlite does.
let queue: Promise<unknown> = Promise.resolve();
const oneConnection = {
  query(text: string, values?: unknown[]) {
    const run = queue.then(() => single.query(text, values));
    queue = run.catch(() => {});
    return run;
  },
};
testStore(
  "postgres (one connection)",
  (clock) => postgresStore(oneConnection, { clock, table: `${table}_client` }),
  {
    skip: service.skip,
  },
);

testStoreAcrossProcesses(
  "postgres (pg.Pool)",
  (name) => {
    processTables.push(`${table}_${name}`);
    return { kind: "postgres", url: service.url, table: `${table}_${name}` };
  },
  { skip: service.skip },
);

(service.skip ? describe.skip : describe)("postgresStore", () => {
  const claimInput = { fingerprint: "fp", token: "t1", leaseMs: 1_000, ttlMs: 60_000 };

  it("creates its table once, with a versioned schema, when many stores start together", async () => {
    const name = `${table}_race`;
    const stores = Array.from({ length: 6 }, () => postgresStore(pool, { table: name }));
    await Promise.all(stores.map((store, i) => store.claim(`k${i}`, claimInput)));
    const meta = await pool.query("SELECT version FROM idemkey_meta WHERE name = $1", [name]);
    expect(meta.rows).toEqual([{ version: 1 }]);
    const count = await pool.query(`SELECT count(*)::int AS n FROM "${name}"`);
    expect(count.rows).toEqual([{ n: 6 }]);
  });

  it("keeps times as bigint epoch milliseconds from its clock", async () => {
    const store = postgresStore(pool, { table, clock: () => 4_000_000_000_000 });
    const { record } = await store.claim(`bigint:${suffix}`, claimInput);
    expect(record).toMatchObject({ createdAt: 4_000_000_000_000, expiresAt: 4_000_000_060_000 });
    const { rows } = await pool.query(
      `SELECT pg_typeof(expires_at)::text AS type, expires_at::text AS raw FROM "${table}" WHERE key = $1`,
      [`bigint:${suffix}`],
    );
    expect(rows).toEqual([{ type: "bigint", raw: "4000000060000" }]);
  });

  it("refuses a table whose schema version is newer than it understands", async () => {
    const name = `${table}_new`;
    await postgresStore(pool, { table: name }).get("k");
    await pool.query("UPDATE idemkey_meta SET version = 7 WHERE name = $1", [name]);
    const error = await postgresStore(pool, { table: name })
      .get("k")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaVersionError);
    expect(error).toMatchObject({ table: `public.${name}`, found: 7, supported: 1 });
  });

  it("puts its tables in the configured schema", async () => {
    await pool.query(`CREATE SCHEMA "${schema}"`);
    const store = postgresStore(pool, { schema, table: "records" });
    await store.claim("k", claimInput);
    const { rows } = await pool.query(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name",
      [schema],
    );
    expect(rows.map((r) => r.table_name)).toEqual(["idemkey_meta", "records"]);
  });

  it("prepares its statements on a node-postgres client, and sends plain text when told not to", async () => {
    const prepared = async () =>
      (await single.query("SELECT name FROM pg_prepared_statements WHERE name LIKE 'idemkey_%'")).rowCount;
    const before = await prepared();
    await postgresStore(single, { table: `${table}_client`, preparedStatements: false }).get("k");
    expect(await prepared()).toBe(before);
    await postgresStore(single, { table: `${table}_client` }).get("k");
    expect(await prepared()).toBe((before ?? 0) + 1);
  });

  it("claims in one statement what recent claims were: a new key one plain insert, a replay one plain read", async () => {
    const texts: string[] = [];
    const counting = {
      query(text: string, values?: unknown[]) {
        texts.push(text.trimStart().split(/\s/)[0]!);
        return pool.query(text, values);
      },
    };
    const store = postgresStore(counting, { table });
    await store.get("warm"); // the migration check, once per store
    const sent = async (call: () => Promise<unknown>) => {
      texts.length = 0;
      await call();
      return [...texts];
    };
    const { record } = await store.claim("order-a", claimInput);
    await store.update("order-a", { token: record.token! }, { state: "completed", result: "1" });
    const replay = () => store.claim("order-a", { ...claimInput, token: "t2" });
    // While no recent claim met a record, a new key is one plain insert, and a replay pays it before its read.
    expect(await sent(() => store.claim("order-b", claimInput))).toEqual(["INSERT"]);
    expect(await sent(replay)).toEqual(["INSERT", "SELECT"]);
    // Insert first while claims make new keys; once some met records, a replay is answered by the same statement.
    for (let i = 0; i < 3; i++) expect(await sent(replay)).toEqual(["WITH"]);
    // Read first once they meet records; a new key then pays the read, and claims turn back to inserting first.
    expect(await sent(replay)).toEqual(["SELECT"]);
    expect(await replay()).toMatchObject({ status: "exists", record: { state: "completed", result: "1" } });
    expect(await sent(() => store.claim("order-c", claimInput))).toEqual(["SELECT", "INSERT"]);
    expect(await sent(() => store.claim("order-d", claimInput))).toEqual(["SELECT", "INSERT"]);
    expect(await sent(() => store.claim("order-e", claimInput))).toEqual(["WITH"]);
    expect(await sent(() => store.claim("order-f", claimInput))).toEqual(["WITH"]);
    expect(await sent(() => store.claim("order-g", claimInput))).toEqual(["INSERT"]);
  });

  it("reads changes along the prefix's range of the primary key, not along the expires_at index", async () => {
    // With `expires_at > now` the planner took the expires_at index whenever the prefix was more than a few percent
    // of the table, and walked every live record of it.
    const name = `${table}_plan`;
    const sent: { text: string; values: unknown[] }[] = [];
    const spy = {
      query(text: string, values?: unknown[]) {
        sent.push({ text, values: values ?? [] });
        return pool.query(text, values);
      },
    };
    const store = postgresStore(spy, { table: name });
    await store.get("k");
    const row = (key: string) =>
      `SELECT ${key}, 'completed', 'fp', NULL, NULL, 0, NULL, NULL, 0, 0, 9999999999999 FROM generate_series(1, $1::int) g`;
    await pool.query(`INSERT INTO "${name}" ${row("'call:' || g")}`, [1_000]);
    await pool.query(`INSERT INTO "${name}" ${row("'other:' || g")}`, [10_000]);
    await pool.query(`ANALYZE "${name}"`);
    const found = await store.changes!({ prefix: "call:", since: 1 });
    expect(found).toMatchObject({ records: [], live: 1_000 });
    const { text, values } = sent.at(-1)!;
    const plan = (await pool.query(`EXPLAIN ${text}`, values)).rows.map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).toContain(`${name}_pkey`);
    expect(plan).not.toContain(`${name}_expires_at`);
  });

  it("rejects bad arguments with a TypeError naming the option", () => {
    // @ts-expect-error: a boolean
    expect(() => postgresStore(pool, { preparedStatements: "yes" })).toThrow(/options\.preparedStatements/);
    expect(() => postgresStore(pool, { table: 'x"; DROP TABLE y; --' })).toThrow(/options\.table/);
    expect(() => postgresStore(pool, { schema: "a.b" })).toThrow(/options\.schema/);
    // @ts-expect-error: a clock must be a function
    expect(() => postgresStore(pool, { clock: "now" })).toThrow(/options\.clock/);
    // @ts-expect-error: not a client
    expect(() => postgresStore({})).toThrow(/client must be/);
  });
});
