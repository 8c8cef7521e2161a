import { randomBytes, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors/index.js";
import { effectOnce, postgresStore } from "../../src/postgres/index.js";
import { postgresService } from "../support/services.js";

const service = await postgresService();
const suffix = randomBytes(4).toString("hex");
const records = `idemkey_test_faults_${suffix}`;
const keys = `idemkey_test_fault_keys_${suffix}`;
const payments = `idemkey_test_fault_payments_${suffix}`;
// The store's pool, and a separate one for the test's own queries (locking, killing, counting).
const pool = new pg.Pool({ connectionString: service.url, max: 4 });
const admin = new pg.Pool({ connectionString: service.url, max: 4 });

/** The backend pids of the store's connections that are waiting on a lock in a query that mentions `text`. */
async function waitingBackend(text: string): Promise<number> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await admin.query(
      `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`,
      [text],
    );
    if (rows[0]) return rows[0].pid;
    await sleep(10);
  }
  throw new Error(`no backend waits on a query with ${text}`);
}

(service.skip ? describe.skip : describe)(
  "PostgreSQL faults: the connection dropped in the middle of a call",
  () => {
    afterAll(async () => {
      await admin.query(`DROP TABLE IF EXISTS "${records}", "${keys}", "${payments}"`);
      await admin.query("DELETE FROM idemkey_meta WHERE name = ANY($1)", [[records, keys]]);
      await admin.end();
      await pool.end();
    });

    it("a completion cut off by pg_terminate_backend fails clearly, records nothing, and the next call recovers", async () => {
      const store = postgresStore(pool, { table: records });
      const key = `fault:${randomUUID()}`;
      const { record } = await store.claim(key, {
        fingerprint: "fp",
        token: "tok",
        leaseMs: 60_000,
        ttlMs: 600_000,
      });

      // Hold the row so that the store's UPDATE is in flight, waiting, when its backend is terminated.
      const locker = await admin.connect();
      await locker.query("BEGIN");
      await locker.query(`SELECT 1 FROM "${records}" WHERE key = $1 FOR UPDATE`, [key]);
      const completing = store.update(
        key,
        { token: record.token! },
        { state: "completed", result: '"done"' },
      );
      completing.catch(() => {});
      const pid = await waitingBackend(`UPDATE "public"."${records}"`);
      await admin.query("SELECT pg_terminate_backend($1)", [pid]);
      const error = await completing.catch((e: unknown) => e);
      await locker.query("ROLLBACK");
      locker.release();

      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({ store: "postgres", operation: "update", key, retryable: true });
      expect((error as Error).message).toMatch(
        /postgres store: update of key .* failed: terminating connection/,
      );
      // Read apart from the store: the row does not claim completion.
      const { rows } = await admin.query(`SELECT state, result FROM "${records}" WHERE key = $1`, [key]);
      expect(rows).toEqual([{ state: "pending", result: null }]);
      // The next call gets a fresh connection from the pool and goes through.
      expect(
        await store.update(key, { token: "tok" }, { state: "completed", result: '"done"' }),
      ).toMatchObject({
        state: "completed",
        result: '"done"',
      });
    });

    it("a claim cut off mid-call fails clearly and the next claim works", async () => {
      const store = postgresStore(pool, { table: records });
      const key = `fault:${randomUUID()}`;
      await store.claim(key, { fingerprint: "fp", token: "first", leaseMs: 1, ttlMs: 600_000 });
      await sleep(5); // the first claim's lease is over: the next claim will take over

      const locker = await admin.connect();
      await locker.query("BEGIN");
      await locker.query(`SELECT 1 FROM "${records}" WHERE key = $1 FOR UPDATE`, [key]);
      const claiming = store.claim(key, {
        fingerprint: "fp",
        token: "second",
        leaseMs: 60_000,
        ttlMs: 600_000,
      });
      claiming.catch(() => {});
      await admin.query("SELECT pg_terminate_backend($1)", [
        await waitingBackend(`FROM "public"."${records}" r`),
      ]);
      const error = await claiming.catch((e: unknown) => e);
      await locker.query("ROLLBACK");
      locker.release();

      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({ operation: "claim", key });
      const { rows } = await admin.query(`SELECT token FROM "${records}" WHERE key = $1`, [key]);
      expect(rows).toEqual([{ token: "first" }]);
      const again = await store.claim(key, {
        fingerprint: "fp",
        token: "third",
        leaseMs: 60_000,
        ttlMs: 600_000,
      });
      expect(again.status).toBe("taken_over");
      expect(again.record.token).toBe("third");
    });

    it("an effectOnce whose connection is terminated while the effect runs commits nothing, and the retry runs it", async () => {
      await admin.query(
        `CREATE TABLE IF NOT EXISTS "${payments}" (id serial PRIMARY KEY, key text NOT NULL)`,
      );
      const key = `fault:${randomUUID()}`;
      let backend!: (pid: number) => void;
      const pidOfEffect = new Promise<number>((resolve) => {
        backend = resolve;
      });
      const call = effectOnce(pool, { key, table: keys }, async (client: pg.PoolClient) => {
        await client.query(`INSERT INTO "${payments}" (key) VALUES ($1)`, [key]);
        backend((await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid);
        await client.query("SELECT pg_sleep(30)"); // the effect is still running when its connection goes
        return "never reached";
      });
      call.catch(() => {});
      await admin.query("SELECT pg_terminate_backend($1)", [await pidOfEffect]);
      const error = await call.catch((e: unknown) => e);

      expect(error).toBeInstanceOf(StoreError);
      expect((error as Error).message).toMatch(/connection to PostgreSQL failed while the effect ran/);
      const count = async (table: string) =>
        (await admin.query(`SELECT count(*)::int AS n FROM "${table}" WHERE key = $1`, [key])).rows[0].n;
      expect(await count(payments)).toBe(0);
      expect(await count(keys)).toBe(0);

      const retry = await effectOnce(pool, { key, table: keys }, async (client: pg.PoolClient) => {
        await client.query(`INSERT INTO "${payments}" (key) VALUES ($1)`, [key]);
        return "paid";
      });
      expect(retry).toEqual({ result: "paid", replayed: false });
      expect(await count(payments)).toBe(1);
      expect(await count(keys)).toBe(1);
    });
  },
);

if (service.skip) await Promise.all([pool.end(), admin.end()]);
