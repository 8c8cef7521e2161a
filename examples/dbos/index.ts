/**
 * idemkey inside DBOS, offline on a local PostgreSQL: a workflow charges a card in a step; the payments API makes the
 * charge and loses its reply; DBOS retries the step. The retry forwards the same idempotency key (from the workflow
 * id and the step id), so the API replays its first answer: one charge. The harness's ledger lives in DBOS's own
 * system database. The example creates that database under a fresh name and drops it at the end.
 *
 * Run: npm run example:dbos (PostgreSQL at IDEMKEY_PG_URL, default postgres://postgres@127.0.0.1:5432/test)
 */
import { randomBytes } from "node:crypto";
import { DBOS } from "@dbos-inc/dbos-sdk";
import pg from "pg";
// In an application: from "idemkey", "idemkey/dbos" and "idemkey/postgres".
import { runStep } from "../../src/dbos/index.js";
import { createHarness, defineTool } from "../../src/index.js";
import { postgresStore } from "../../src/postgres/index.js";
import { paymentsApi } from "../engines/payments.js";

const base = process.env.IDEMKEY_PG_URL || "postgres://postgres@127.0.0.1:5432/test";
const database = `idemkey_example_dbos_${randomBytes(4).toString("hex")}`;
const url = new URL(base);
url.pathname = `/${database}`;
// DBOS's idle-in-transaction timeout set at connect time rather than by a SET it queues on each new connection,
// which pg 8 reports as a DeprecationWarning.
url.searchParams.set("options", "-c idle_in_transaction_session_timeout=60000");

const api = await paymentsApi();
const chargeCard = defineTool({
  name: "chargeCard",
  effect: "keyed",
  run: (args: { amount: number }, ctx) => api.charge(args.amount, ctx.idempotencyKey),
});

let harness: ReturnType<typeof createHarness>;
const checkout = DBOS.registerWorkflow(
  async (amount: number) =>
    runStep(harness, chargeCard, { amount }, { retriesAllowed: true, intervalSeconds: 0.1, maxAttempts: 3 }),
  { name: "checkout" },
);

DBOS.setConfig({ name: "idemkey-example", systemDatabaseUrl: url.toString(), logLevel: "error" });
await DBOS.launch();
const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
try {
  // The harness does not retry on its own here: the retries are DBOS's.
  harness = createHarness({ store: postgresStore(pool, { table: "idemkey_ledger" }), retry: { retries: 0 } });
  const handle = await DBOS.startWorkflow(checkout, { workflowID: "order-1042" })(1999);
  const receipt = await handle.getResult();
  console.log("receipt:", receipt);
  console.log(
    `requests to the payments API: ${api.requests()} (the first reply was lost; DBOS retried the step)`,
  );
  console.log(`charges made: ${api.charges.length}, under key ${api.charges[0]?.key.slice(0, 16)}...`);
  if (api.charges.length !== 1) process.exitCode = 1;
} finally {
  await DBOS.shutdown();
  await pool.end();
  await api.close();
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  await admin.end();
}
