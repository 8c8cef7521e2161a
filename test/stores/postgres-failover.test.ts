import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresStore } from "../../src/postgres/index.js";
import {
  describeReport,
  expectNothingRepeated,
  runFailoverWorkload,
} from "../support/cluster/failover-workload.js";
import { type PgPair, startPgPair } from "../support/cluster/pg-standby.js";
import { waitFor } from "../support/cluster/processes.js";
import { type SwitchProxy, startSwitchProxy } from "../support/cluster/switch-proxy.js";

/**
 * The PostgreSQL primary SIGKILLed with harness calls and HTTP requests in flight, on a primary + streaming standby
 * of the test's own: the standby is promoted and a loopback proxy in front of the pair switches to it, as a DNS or
 * virtual-IP failover would; the store's `pg.Pool` reconnects through it.
 */
const leaseMs = 5_000;

interface Row {
  state: string;
  attempts: number;
  row: string;
}

/** Every record of `table` on the server at `port`, read on a connection of the test's own. */
async function snapshot(port: number, table: string): Promise<Map<string, Row>> {
  const client = new pg.Client({ host: "127.0.0.1", port, user: "postgres", database: "test" });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT key, state, attempts, to_jsonb(t)::text AS row FROM "${table}" t`,
    );
    return new Map(rows.map((r) => [r.key as string, { state: r.state, attempts: r.attempts, row: r.row }]));
  } finally {
    await client.end();
  }
}

for (const synchronous of [true, false]) {
  const mode = synchronous ? "synchronous" : "asynchronous";
  describe(`PostgreSQL failover, ${mode} replication`, () => {
    let pair: PgPair | undefined;
    let proxy: SwitchProxy | undefined;
    let pool: pg.Pool | undefined;
    beforeAll(async () => {
      pair = await startPgPair({ synchronous });
      proxy = await startSwitchProxy(pair.primaryPort);
    }, 120_000);
    afterAll(async () => {
      // The servers first: a pool whose queries still wait on a dead server ends once they fail.
      await proxy?.close();
      await pair?.stop();
      await pool?.end().catch(() => {});
    });

    it(`the primary SIGKILLed and the standby promoted mid-run: ${synchronous ? "no effect runs twice" : "every re-run is explained by a commit the standby missed"}`, async () => {
      pool = new pg.Pool({
        host: "127.0.0.1",
        port: proxy!.port,
        user: "postgres",
        database: "test",
        max: 8,
        connectionTimeoutMillis: 5_000,
      });
      // Idle connections cut by the failover emit 'error' on the pool: the application's to handle.
      pool.on("error", () => {});
      const table = `idemkey_failover_${randomBytes(4).toString("hex")}`;
      const store = postgresStore(pool, { table });
      let failoverMs = 0;
      let standbyHad = new Map<string, Row>();
      const report = await runFailoverWorkload({
        store,
        leaseMs,
        fault: async () => {
          if (!synchronous) {
            // A lagging standby, made so: the primary's WAL senders stop, and the primary commits on for a dozen
            // more completions that the standby never receives.
            const completed = async () =>
              [...(await snapshot(pair!.primaryPort, table)).values()].filter((r) => r.state === "completed")
                .length;
            const before = await completed();
            await pair!.pauseReplication();
            await waitFor("commits the standby lacks", async () =>
              (await completed()) >= before + 12 ? true : undefined,
            );
          }
          const started = Date.now();
          await pair!.killPrimary();
          await pair!.promote();
          // What the standby had when it took over, read before any client reaches it.
          standbyHad = await snapshot(pair!.standbyPort, table);
          proxy!.switchTo(pair!.standbyPort);
          failoverMs = Date.now() - started;
        },
      });
      // What the primary had committed when it died: started again on its own (crash recovery replays its WAL).
      await pair!.startPrimary();
      const primaryHad = await snapshot(pair!.primaryPort, table);
      const missed = new Set(
        [...primaryHad].filter(([key, row]) => standbyHad.get(key)?.row !== row.row).map(([key]) => key),
      );
      console.log(
        `PostgreSQL ${mode}: failover took ${failoverMs} ms; the standby missed ${missed.size} of the primary's ` +
          `${primaryHad.size} records' last commits (${[...missed].filter((k) => !standbyHad.has(k)).length} ` +
          `records absent); ${describeReport(report)}`,
      );
      // Every re-run is explained by a commit the standby missed. A keyed call ran again (with its one key, which
      // the workload checks) only if the standby lacked its completion. An unguarded tool only if the standby had
      // no record of it or a pending one without the started mark (attempts 0); a handler only if the standby had
      // no record of its key at all (a pending one is taken over as outcome unknown, never run again).
      const repeated = (runs: Map<string, number | string[]>) =>
        [...runs].filter(([, n]) => (typeof n === "number" ? n : n.length) > 1).map(([id]) => id);
      if (!synchronous) expect(missed.size, "the standby lagged: it missed commits").toBeGreaterThan(0);
      for (const id of repeated(report.keyed)) {
        const key = report.storeKeys.keyed(id);
        expect(missed.has(key), `keyed ${id} ran again, yet the standby had its last commit`).toBe(true);
        expect(standbyHad.get(key)?.state, `keyed ${id}`).not.toBe("completed");
      }
      for (const id of repeated(report.unguarded)) {
        const key = report.storeKeys.unguarded(id);
        const had = standbyHad.get(key);
        expect(missed.has(key), `unguarded ${id} ran again, yet the standby had its last commit`).toBe(true);
        expect(
          had === undefined || (had.state === "pending" && had.attempts === 0),
          `unguarded ${id} ran again, yet the standby had its started mark: ${had?.row}`,
        ).toBe(true);
      }
      for (const name of repeated(report.handler)) {
        const key = report.storeKeys.handler(name);
        expect(missed.has(key), `handler ${name} ran again, yet the standby had its last commit`).toBe(true);
        expect(
          standbyHad.get(key),
          `handler ${name} ran again, yet the standby had its record`,
        ).toBeUndefined();
      }
      // A synchronous standby has every commit the primary acknowledged, and the claim layer's retries carry every
      // completion and saved response across the failover: nothing runs twice. An asynchronous one lacks what it
      // was never sent (above: a dozen completions, and the claims and started marks before them), and what those
      // commits recorded is forgotten; the checks above tie each re-run to one of them, as the README's table says.
      if (synchronous) {
        expectNothingRepeated(report);
      }
    }, 300_000);
  });
}
