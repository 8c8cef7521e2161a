/*
 * The Worker the workerd tests run against (wrangler.jsonc): a Durable Object whose storage holds an idemkey store,
 * another that only counts effects (the independent record), and a fetch handler that makes one harness call.
 */
import { DurableObject } from "cloudflare:workers";
import { durableObjectStore, type StoreMethod, type StoreObject } from "../../src/cloudflare/index.js";
import type { Store } from "../../src/store/types.js";

export interface Env {
  LEDGER: DurableObjectNamespace<Ledger>;
  EFFECTS: DurableObjectNamespace<Effects>;
  SHARED: DurableObjectNamespace<SharedLedger>;
  DB: D1Database;
}

/** An object whose SQLite holds an idemkey store; the tests reach it through runInDurableObject. */
export class Ledger extends DurableObject<Env> {
  store: Store = durableObjectStore(this.ctx.storage);
}

/**
 * A ledger other objects reach over RPC (objectStore): it serves whatever store the test sets in it, so that the
 * contract suite's clock runs inside the object.
 */
export class SharedLedger extends DurableObject<Env> {
  serve?: StoreObject["idemkeyStore"];
  idemkeyStore(method: StoreMethod, args: unknown[]): Promise<unknown> {
    return this.serve!(method, args);
  }
}

/** Counts effects per key in its own storage: what the tests read back, never the store under test. */
export class Effects extends DurableObject<Env> {
  effect(key: string): number {
    const sql = this.ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS effects (key TEXT NOT NULL)");
    sql.exec("INSERT INTO effects (key) VALUES (?)", key);
    return this.count(key);
  }
  count(key: string): number {
    const sql = this.ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS effects (key TEXT NOT NULL)");
    return sql.exec("SELECT count(*) AS n FROM effects WHERE key = ?", key).one().n as number;
  }
}

export default {
  async fetch(): Promise<Response> {
    return new Response("ok");
  },
} satisfies ExportedHandler<Env>;
