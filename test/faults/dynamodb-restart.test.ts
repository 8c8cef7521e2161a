import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { createDynamoTable, dynamoStore } from "../../src/dynamodb/index.js";
import { frameworks } from "../owner/apps.js";
import {
  describeReport,
  expectNothingRepeated,
  runFailoverWorkload,
} from "../support/cluster/failover-workload.js";
import { type PrivateDynalite, privateDynalite } from "../support/dynalite.js";

/**
 * Issue 45 on a dynalite of the test's own, its LevelDB in a private temp dir: killed with SIGKILL while harness
 * calls (keyed and unguarded) and requests through the Express, Hono and Fastify middleware are in flight, down for a
 * lease, then started again on the same data. Calls whose request was cut mid-way get an error that says nothing of
 * whether it applied (a reset connection): the claim layer treats those as unknown, and every effect is counted where
 * it happens (the tools' and the handlers' own lists), never through the store. A killed process loses no write it
 * acknowledged (LevelDB's log is in the page cache), so nothing may run twice and no completion may be lost.
 */
const leaseMs = 4_000;

describe("dynalite killed and restarted mid-flight", () => {
  let dynalite: PrivateDynalite | undefined;
  afterAll(() => dynalite?.stop());

  it("no handler or unguarded tool runs twice, no save or completion is lost", async () => {
    dynalite = await privateDynalite({ persist: true });
    // The SDK's own retries (3 attempts) stay on, as in an application: they resend what the store then fences.
    const client = dynalite.client();
    const table = "idemkey-restart";
    await createDynamoTable(client, { table });
    const store = dynamoStore(client, { table });
    let outageMs = 0;
    const report = await runFailoverWorkload({
      store,
      leaseMs,
      frameworks,
      holdInFlight: true,
      fault: async ({ release }) => {
        const started = Date.now();
        await dynalite!.kill();
        release();
        // Down for a whole lease: renewals fail and leases lapse; the must-happen writes keep trying.
        await sleep(leaseMs);
        await dynalite!.start();
        outageMs = Date.now() - started;
      },
    });
    expect(outageMs).toBeGreaterThanOrEqual(leaseMs);
    expectNothingRepeated(report);
    for (const framework of frameworks) {
      const runs = [...report.handler.keys()].filter((k) => k.startsWith(`${framework.name}:`));
      expect(runs.length, framework.name).toBeGreaterThan(0);
    }
    // The outage was felt: calls in flight failed with errors that decided nothing, or waited.
    expect(report.failures.size, describeReport(report)).toBeGreaterThan(0);
  }, 300_000);
});
