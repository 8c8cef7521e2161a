import { Hono } from "hono";
import mysql, { type ResultSetHeader } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NetworkError } from "../../src/errors/index.js";
import { idempotency } from "../../src/hono/index.js";
import { createHarness, defineTool } from "../../src/index.js";
import { mysqlStore } from "../../src/mysql/index.js";
import { privateMariaDb } from "../support/mariadb.js";

/**
 * The harness and the owner's middleware each on a MySQL store (a private MariaDB of this file's own), with a fake
 * owner whose effect is a row in its own `charges` table: the tests count those rows, never idemkey's records.
 */
const server = await privateMariaDb();
const pool = mysql.createPool({ uri: server.url, connectionLimit: 12 });

const charges = async (key: string) =>
  Number(
    (
      (await pool.query("SELECT COUNT(*) AS n FROM charges WHERE idem_key = ?", [key]))[0] as { n: number }[]
    )[0]!.n,
  );

/** The owner: a Hono app whose POST /charges writes one row, behind idemkey's middleware on the MySQL store. */
function owner() {
  const app = new Hono();
  app.use("*", idempotency({ store: mysqlStore(pool, { table: "owner_keys" }), scope: "single-tenant" }));
  app.post("/charges", async (c) => {
    const { cents } = (await c.req.json()) as { cents: number };
    const [header] = await pool.query("INSERT INTO charges (idem_key, cents) VALUES (?, ?)", [
      c.req.header("idempotency-key"),
      cents,
    ]);
    return c.json({ id: (header as ResultSetHeader).insertId, cents }, 201);
  });
  const post = (key: string, body: unknown) =>
    app.request("/charges", {
      method: "POST",
      headers: { "idempotency-key": key, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  return { post };
}

describe("the owner's middleware and the harness on mysqlStore", () => {
  beforeAll(async () => {
    await pool.query(
      "CREATE TABLE charges (id INT AUTO_INCREMENT PRIMARY KEY, idem_key VARCHAR(255) NOT NULL, cents INT NOT NULL)",
    );
  });
  afterAll(async () => {
    await pool.end();
    await server.stop();
  });

  it("Hono (app.request): 8 concurrent requests and 3 retries with one Idempotency-Key write one row", async () => {
    const { post } = owner();
    const key = "hono-once";
    const first = await Promise.all(Array.from({ length: 8 }, () => post(key, { cents: 500 })));
    // One ran; the others replayed it or were told it is in progress (409), never run.
    expect(first.map((r) => r.status).every((s) => s === 201 || s === 409)).toBe(true);
    const bodies = new Set<string>();
    for (const response of first) if (response.status === 201) bodies.add(await response.text());
    for (let i = 0; i < 3; i++) {
      const again = await post(key, { cents: 500 });
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      bodies.add(await again.text());
    }
    expect(bodies.size).toBe(1);
    expect(await charges(key)).toBe(1);
    expect((await post(key, { cents: 999 })).status).toBe(422);
    expect(await charges(key)).toBe(1);
  });

  it("the harness: concurrent calls, and a retry after a lost answer, reach the owner with one key: one row", async () => {
    const { post } = owner();
    let lose = 1;
    const charge = defineTool({
      name: "charge",
      effect: "keyed",
      run: async (args: { cents: number }, ctx) => {
        const response = await post(ctx.idempotencyKey, args);
        // The first answer is lost on the way back: the harness retries with the same key and the owner replays.
        if (lose-- > 0) throw new NetworkError({ code: "ECONNRESET", noEffect: false });
        return (await response.json()) as { id: number; cents: number };
      },
    });
    const harness = createHarness({
      store: mysqlStore(pool, { table: "ledger" }),
      retry: { retries: 3, minDelayMs: 1, maxDelayMs: 5 },
      wait: { minDelayMs: 1 },
    });
    const results = await Promise.all(
      Array.from({ length: 6 }, () => harness.call("task", charge, { cents: 250 })),
    );
    results.push(await harness.call("task", charge, { cents: 250 }));
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
    expect(await charges(harness.key("task", charge, { cents: 250 }))).toBe(1);
  });
});
