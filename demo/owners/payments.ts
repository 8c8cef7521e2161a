import { createHash } from "node:crypto";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { Hono } from "hono";
import { IdempotencyConflictError } from "../../src/errors/index.js";
import { parseKeyHeader } from "../../src/owner/key-header.js";
import { effectOnce } from "../../src/sqlite/index.js";
import { TRACE_HEADER } from "../protocol.js";
import { type Env, faults, listen, requestLog } from "./http.js";
import type { Owner } from "./types.js";

/**
 * A payments-like API: `POST /charges` records a charge in its own SQLite file. With an `Idempotency-Key` the
 * insert runs through `effectOnce`, the key and the charge in one transaction, and a repeated key gets the first
 * charge back; without one (the keyless modes) every request is a new charge.
 */
export async function payments(dir: string): Promise<Owner> {
  const db = new BetterSqlite3(join(dir, "payments.db"));
  db.pragma("journal_mode = WAL");
  db.exec(`CREATE TABLE charges (
    id INTEGER PRIMARY KEY, task TEXT NOT NULL, customer TEXT NOT NULL, amount_cents INTEGER NOT NULL, trace TEXT)`);
  const insert = db.prepare<[string, string, number, string | null], { id: number }>(
    "INSERT INTO charges (task, customer, amount_cents, trace) VALUES (?, ?, ?, ?) RETURNING id",
  );
  const app = new Hono<Env>();
  const log = requestLog(db);
  app.use(faults(log));
  app.post("/charges", async (c) => {
    const text = await c.req.text();
    const body = JSON.parse(text) as {
      customer?: unknown;
      amountCents?: unknown;
      metadata?: { task?: unknown };
    };
    const { customer, amountCents } = body;
    const task = body.metadata?.task;
    if (typeof customer !== "string" || typeof task !== "string" || !Number.isInteger(amountCents)) {
      return c.json({ error: "customer, amountCents and metadata.task are required" }, 400);
    }
    const trace = c.req.header(TRACE_HEADER) ?? null;
    const charge = () => {
      const { id } = insert.get(task, customer, amountCents as number, trace)!;
      return { id: `ch_${id}`, customer, amountCents };
    };
    const raw = c.req.header("idempotency-key");
    if (raw === undefined) return c.json(charge(), 201);
    const header = parseKeyHeader([raw]);
    if (!header.ok) return c.json({ error: header.detail }, 400);
    const fingerprint = createHash("sha256").update(text).digest("hex");
    try {
      const { result, replayed } = effectOnce(db, { key: header.key, fingerprint }, charge);
      return c.json(result, replayed ? 200 : 201, replayed ? { "idempotent-replayed": "true" } : {});
    } catch (error) {
      if (error instanceof IdempotencyConflictError) return c.json({ error: error.message }, 422);
      throw error;
    }
  });
  const server = await listen(app);
  return {
    name: "payments",
    tool: "createCharge",
    effect: "keyed",
    url: server.url,
    expected: (tasks) => new Map(tasks.map((t) => [t.id, 1])),
    effects: () =>
      db
        .prepare<[], { task: string; trace: string | null }>("SELECT task, trace FROM charges ORDER BY id")
        .all()
        .map((row) => ({ group: row.task, trace: row.trace })),
    requests: () => log.counts(),
    async close() {
      await server.close();
      db.close();
    },
  };
}
