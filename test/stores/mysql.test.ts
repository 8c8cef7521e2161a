import mysql from "mysql2/promise";
import { afterAll, describe, expect, it } from "vitest";
import { SchemaVersionError, StoreLayoutError } from "../../src/errors/index.js";
import { mysqlStore } from "../../src/mysql/index.js";
import { privateMariaDb } from "../support/mariadb.js";
import { testStore, testStoreAcrossProcesses } from "./contract.js";

const server = await privateMariaDb();
const pool = mysql.createPool({ uri: server.url, connectionLimit: 8 });

afterAll(async () => {
  await pool.end();
  await server.stop();
});

testStore("mysql (MariaDB, mysql2 pool)", (clock) => mysqlStore(pool, { clock, table: "records" }));
testStoreAcrossProcesses("mysql (MariaDB, mysql2 pool)", (name) => ({
  kind: "mysql",
  url: server.url,
  table: `processes_${name}`,
}));

describe("mysqlStore", () => {
  const claimInput = { fingerprint: "fp", token: "t1", leaseMs: 1_000, ttlMs: 60_000 };

  it("creates its table once, with a versioned schema, when many stores start together", async () => {
    const stores = Array.from({ length: 6 }, () => mysqlStore(pool, { table: "race" }));
    await Promise.all(stores.map((store, i) => store.claim(`k${i}`, claimInput)));
    const [meta] = await pool.query("SELECT version FROM idemkey_meta WHERE name = 'race'");
    expect(meta).toEqual([{ version: 1 }]);
    const [count] = await pool.query("SELECT COUNT(*) AS n FROM race");
    expect(count).toEqual([{ n: 6 }]);
  });

  it("refuses a table whose schema version is newer than it understands", async () => {
    await mysqlStore(pool, { table: "newer" }).get("k");
    await pool.query("UPDATE idemkey_meta SET version = 7 WHERE name = 'newer'");
    const error = await mysqlStore(pool, { table: "newer" })
      .get("k")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaVersionError);
    expect(error).toMatchObject({ table: `${server.database}.newer`, found: 7, supported: 1 });
  });

  it("refuses a table of the same name that it did not create, and writes nothing into it", async () => {
    await pool.query("CREATE TABLE orders (`key` VARCHAR(64) PRIMARY KEY, state TEXT) ENGINE=InnoDB");
    const error = await mysqlStore(pool, { table: "orders" })
      .claim("k", claimInput)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreLayoutError);
    expect(error).toMatchObject({ store: "mysql", location: `${server.database}.orders` });
    const [rows] = await pool.query("SELECT COUNT(*) AS n FROM orders");
    expect(rows).toEqual([{ n: 0 }]);
  });

  it("decides leases on the server's clock, whatever the process's clock says", async () => {
    const store = mysqlStore(pool, { table: "server_clock" });
    const [[{ now }]] = (await pool.query(
      "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000 AS now",
    )) as unknown as [[{ now: number }]];
    const { record } = await store.claim("clock", claimInput);
    // Within a minute of the server's instant, on its clock: the record was timed there, not here.
    expect(Math.abs(record.createdAt - Number(now))).toBeLessThan(60_000);
    expect(record.leaseUntil).toBe(record.createdAt + 1_000);
    const [[row]] = (await pool.query("SELECT created_at, lease_until FROM server_clock")) as unknown as [
      [{ created_at: number; lease_until: number }],
    ];
    expect(row).toEqual({ created_at: record.createdAt, lease_until: record.leaseUntil });
  });

  it("refuses a key longer than the primary key holds, rather than truncating it into another's", async () => {
    const store = mysqlStore(pool, { table: "records" });
    await expect(store.claim("k".repeat(3073), claimInput)).rejects.toThrow(TypeError);
    await expect(store.claim("é".repeat(1537), claimInput)).rejects.toThrow(/at most 3072 bytes/);
    expect((await store.claim("k".repeat(3072), claimInput)).status).toBe("claimed");
  });

  it("names the option a bad value came in", () => {
    expect(() => mysqlStore(pool, { table: "bad name" })).toThrow(/options\.table/);
    expect(() => mysqlStore({} as never)).toThrow(/mysql2\/promise Pool/);
  });
});

// How long a private server took to start here, for CI's budget (reported, never asserted).
console.log(`private MariaDB on port ${server.port} started in ${server.startedInMs} ms`);
