// hello.ts: one tool, a SQLite ledger, a crash between the effect and the ledger write, a replay, one effect.
// `node hello.ts crash` dies right after the charge; `node hello.ts` then makes the same call again.
import Database from "better-sqlite3";
import { createHarness, defineTool } from "idemkey";
import { effectOnce, sqliteStore } from "idemkey/sqlite";

// The owner of the effect: a payments database that writes each charge and its key in one transaction.
const payments = new Database("payments.db");
payments.exec("CREATE TABLE IF NOT EXISTS charges (id INTEGER PRIMARY KEY, cents INTEGER NOT NULL)");

const charge = defineTool({
  name: "charge",
  effect: "keyed", // the owner dedupes on ctx.idempotencyKey, which the harness derives
  run: (args: { cents: number }, ctx) => {
    const { result } = effectOnce(payments, { key: ctx.idempotencyKey, fingerprint: `${args.cents}` }, (db) =>
      db.prepare("INSERT INTO charges (cents) VALUES (?) RETURNING id").get(args.cents),
    );
    if (process.argv[2] === "crash") process.exit(1); // the effect happened; the ledger never hears of it
    return result as { id: number };
  },
});

// The ledger: a SQLite file. A claim held by a dead process is taken over once its lease (2 s here) runs out.
const harness = createHarness({ store: sqliteStore("ledger.db"), leaseMs: 2_000 });
const receipt = await harness.call("order-42", charge, { cents: 500 });
const { n } = payments.prepare("SELECT count(*) AS n FROM charges").get() as { n: number };
console.log(`charge #${receipt.id}; the payments database holds ${n} charge(s)`);
