import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import type { LedgerSpec } from "./protocol.js";

/** Where the idemkey mode keeps its ledger: a SQLite file in the run's directory, or a server named by URL. */
export type LedgerOption =
  | "sqlite"
  | { kind: "postgres"; url: string }
  /**
   * `cluster`: every node of a Redis Cluster (`redis://host:port`), all given to the client as seeds, so that a
   * worker started while one is down still finds the others; `url` is one of them. The caller owns the cluster and
   * removes it after the run.
   */
  | { kind: "redis"; url: string; cluster?: string[] };

/**
 * A fresh ledger for one run, and how to remove it: a new SQLite file, or a table (PostgreSQL) or key prefix
 * (Redis) of its own, so that runs never see one another's records and nothing is left behind.
 */
export function freshLedger(option: LedgerOption, dir: string): { spec: LedgerSpec; drop(): Promise<void> } {
  if (option === "sqlite")
    return { spec: { kind: "sqlite", path: join(dir, "ledger.db") }, drop: async () => {} };
  const id = randomBytes(6).toString("hex");
  if (option.kind === "postgres") {
    const table = `idemkey_chaos_${id}`;
    return {
      spec: { kind: "postgres", url: option.url, table },
      async drop() {
        const client = new pg.Client({ connectionString: option.url });
        await client.connect();
        try {
          await client.query(`DROP TABLE IF EXISTS "public"."${table}"`);
          await client.query(`DELETE FROM "public"."idemkey_meta" WHERE name = $1`, [table]).catch(() => {});
        } finally {
          await client.end();
        }
      },
    };
  }
  const prefix = `{idemkey-chaos-${id}}:`;
  if (option.cluster) {
    // The cluster is the caller's, started for this run and removed with everything in it.
    return {
      spec: { kind: "redis", url: option.url, prefix, cluster: option.cluster },
      drop: async () => {},
    };
  }
  return {
    spec: { kind: "redis", url: option.url, prefix },
    async drop() {
      const client = new Redis(option.url, { maxRetriesPerRequest: 1 });
      try {
        let cursor = "0";
        do {
          const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
          if (keys.length > 0) await client.del(...keys);
          cursor = next;
        } while (cursor !== "0");
      } finally {
        client.disconnect();
      }
    },
  };
}

export function ledgerName(option: LedgerOption): string {
  return option === "sqlite" ? "sqlite" : option.kind;
}
