import { randomBytes } from "node:crypto";
import { DBOS } from "@dbos-inc/dbos-sdk";
import pg from "pg";
import { runStep } from "../../../../src/dbos/index.js";
import { defineTool, type Harness } from "../../../../src/index.js";
import type { Service } from "../../../support/services.js";
import type { EngineDriver } from "../engines.js";
import { ARGS, type World } from "../world.js";

/** The world and harness of the execution running now: DBOS registers its workflows once, before it launches. */
let current: { world: World; harness: Harness } | undefined;
/** How many times DBOS ran the step's body in the execution running now (its own retries included). */
let attempts = 0;

const retries = { retriesAllowed: true, intervalSeconds: 0.01, backoffRate: 1, maxAttempts: 3 };

const charge = DBOS.registerWorkflow(
  async () => {
    const { world, harness } = current!;
    const tool = defineTool({
      name: world.spec.name,
      effect: world.spec.effect,
      run: (_args: object, ctx) => world.owner.act(ctx.idempotencyKey),
    });
    return runStep(counted(harness), tool, ARGS, retries);
  },
  { name: "contractCharge" },
);

/** The harness, counting the step's attempts: each attempt DBOS makes calls it once. */
function counted(harness: Harness): Harness {
  return new Proxy(harness, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (property === "call" || property === "callWithOutcome") attempts += 1;
        return value.apply(target, args);
      };
    },
  });
}

/** A fresh DBOS system database per run on the shared PostgreSQL (as test/engines/dbos.test.ts makes its own). */
export function dbosEngine(service: Service) {
  const database = `idemkey_contract_dbos_${randomBytes(4).toString("hex")}`;
  const url = new URL(service.url);
  url.pathname = `/${database}`;
  return {
    async launch() {
      // DBOS logs every failed step; the table's failures are expected and checked, so they stay quiet.
      const silent = () => {};
      DBOS.setConfig({
        name: "idemkey-contract",
        systemDatabaseUrl: url.toString(),
        logLevel: "error",
        logger: { info: silent, debug: silent, warn: silent, error: silent },
      });
      // pg deprecates the overlapping queries DBOS's launch makes (once a process): the SDK's, not the test's.
      const emit = process.emitWarning.bind(process);
      const overlapping = /already executing a query/;
      process.emitWarning = ((warning: string | Error, ...rest: never[]) => {
        if (!overlapping.test(String(warning))) emit(warning, ...rest);
      }) as typeof process.emitWarning;
      try {
        await DBOS.launch();
      } finally {
        process.emitWarning = emit;
      }
    },
    async shutdown() {
      await DBOS.shutdown().catch(() => {});
      const admin = new pg.Client({ connectionString: service.url });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await admin.end();
    },
  };
}

/**
 * `runStep` in a DBOS workflow on the real SDK: a run is a workflow id. An attempt after the first is the step run
 * again under the same workflow id, as DBOS's recovery runs it when a worker died before DBOS checkpointed the step:
 * the driver deletes the workflow's checkpoints first (`DBOS.deleteWorkflow`), or DBOS would answer from them and
 * never reach idemkey. DBOS has no non-retryable error class: its step retries (3 attempts here) stop when
 * `shouldRetry` says so, so "would retry" is "DBOS ran the step more than once".
 */
export const dbosDriver: EngineDriver = {
  name: "runStep (DBOS workflow)",
  async execute(world, { run, attempt }) {
    const workflowID = `${world.taskId}/${run}`;
    if (attempt > 1) await DBOS.deleteWorkflow(workflowID);
    current = { world, harness: world.harness() };
    attempts = 0;
    try {
      const handle = await DBOS.startWorkflow(charge, { workflowID })();
      return { value: await handle.getResult() };
    } catch (error) {
      return { error, retryable: attempts > 1 };
    } finally {
      current = undefined;
    }
  },
};
