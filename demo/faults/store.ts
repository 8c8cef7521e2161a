import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import BetterSqlite3 from "better-sqlite3";
import type { LedgerSpec } from "../protocol.js";
import { random } from "../schedule.js";
import { type FaultProxy, faultProxy } from "./proxy.js";

/** What the store-fault mode did to the ledger during one run. */
export interface StoreFaultCounts {
  /** Every connection to the server reset at once. */
  reset: number;
  /** All traffic held back, some for longer than a lease. */
  stall: number;
  /** One reply dropped (and its connection reset): the command may have been applied. */
  drop: number;
  /** The SQLite file's write lock held by another connection. */
  lock: number;
}

/**
 * Breaks the idemkey mode's ledger while a chaos run goes on, on a schedule drawn from the seed: for PostgreSQL and
 * Redis a fault proxy between the workers and the server resets connections, stalls traffic (up to one and a half
 * leases) and drops single replies; for SQLite another connection holds the file's write lock for up to a lease.
 * `spec` is the ledger as workers must open it (through the proxy); `stop` ends the faults and returns the counts.
 */
export async function startStoreFaults(
  spec: LedgerSpec,
  options: { seed: number; leaseMs: number },
): Promise<{ spec: LedgerSpec; stop(): Promise<StoreFaultCounts> }> {
  const next = random(options.seed ^ 0x5f0e);
  const between = (lo: number, hi: number) => Math.round(lo + next() * (hi - lo));
  const counts: StoreFaultCounts = { reset: 0, stall: 0, drop: 0, lock: 0 };
  let stopped = false;
  let proxy: FaultProxy | undefined;
  let proxied = spec;

  if (spec.kind !== "sqlite") {
    const url = new URL(spec.url);
    const port = Number(url.port || (spec.kind === "postgres" ? 5432 : 6379));
    proxy = await faultProxy(port, url.hostname);
    url.hostname = "127.0.0.1";
    url.port = String(proxy.port);
    proxied = { ...spec, url: url.toString() };
  }

  const loop = (async () => {
    let db: BetterSqlite3.Database | undefined;
    while (!stopped) {
      await sleep(between(150, 600));
      if (stopped) break;
      if (proxy) {
        const pick = next();
        if (pick < 0.4) {
          proxy.resetAll();
          counts.reset++;
        } else if (pick < 0.7) {
          proxy.stall();
          counts.stall++;
          await sleep(between(50, Math.round(1.5 * options.leaseMs)));
          proxy.resume();
        } else {
          counts.drop++;
          void proxy.dropNextReply();
        }
        continue;
      }
      if (spec.kind !== "sqlite" || !existsSync(spec.path)) continue;
      db ??= new BetterSqlite3(spec.path, { timeout: 0 });
      try {
        db.exec("BEGIN IMMEDIATE");
      } catch {
        continue; // a worker holds it right now
      }
      counts.lock++;
      await sleep(between(20, options.leaseMs));
      db.exec("COMMIT");
    }
    db?.close();
  })();

  return {
    spec: proxied,
    async stop() {
      stopped = true;
      await loop;
      await proxy?.close();
      return counts;
    },
  };
}
