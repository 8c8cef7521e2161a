import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DBOS } from "@dbos-inc/dbos-sdk";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, retryUnlessOutcomeUnknown, runStep, stepIdentity } from "../../src/dbos/index.js";
import {
  CanonicalizationError,
  createHarness,
  defineTool,
  idempotencyKey,
  OutcomeUnknownError,
} from "../../src/index.js";
import { postgresStore } from "../../src/postgres/index.js";
import { postgresService } from "../support/services.js";
import { dbosDatabaseUrl } from "./dbos-url.js";
import { charge, type Owner, startOwner } from "./owner.js";

const service = await postgresService();
const dir = mkdtempSync(join(tmpdir(), "idemkey-dbos-"));
// DBOS creates its system database itself: a fresh one per run, dropped afterwards; idemkey's ledger lives in it too.
const database = `idemkey_dbos_${randomBytes(4).toString("hex")}`;
const dbUrl = dbosDatabaseUrl(service.url, database);

let owner: Owner;
let pool: pg.Pool;
/** Which requests the owner drops after taking effect: the reply is lost, the step fails and DBOS retries it. */
const drop = new Set<number>();

const harnessFor = () =>
  // No retries inside the harness: the step's retries are DBOS's, which is what these tests exercise.
  createHarness({ store: postgresStore(pool, { table: "idemkey_ledger" }), retry: { retries: 0 } });

const chargeTool = defineTool({
  name: "charge",
  effect: "keyed",
  run: (args: { amount: number }, ctx) => charge(owner.url, "/charges", args.amount, ctx.idempotencyKey),
});
const unguardedTool = defineTool({
  name: "chargeUnguarded",
  effect: "unguarded",
  run: (args: { amount: number }) => charge(owner.url, "/unguarded", args.amount, undefined),
});
const retries = { retriesAllowed: true, intervalSeconds: 0.05, backoffRate: 1, maxAttempts: 3 };
/** Charges, then returns what JSON cannot hold: the ledger closes the key ("will not run again for this key"). */
const bigintTool = defineTool({
  name: "chargeBigint",
  effect: "keyed",
  run: async (args: { amount: number }, ctx) => {
    const receipt = await charge(owner.url, "/charges", args.amount, ctx.idempotencyKey);
    return { ...receipt, cents: BigInt(args.amount) };
  },
});
/** Attempts DBOS made of the user's own step below, counted in the step's body. */
let bigintAttempts = 0;

let harness: ReturnType<typeof harnessFor>;
const withIdemkey = DBOS.registerWorkflow(
  async (amount: number) => runStep(harness, chargeTool, { amount }, retries),
  { name: "withIdemkey" },
);
/** What DBOS users hand-roll without idemkey: a key from the workflow id, the step id and the attempt. */
const handRolled = DBOS.registerWorkflow(
  async (amount: number) =>
    DBOS.runStep(
      () =>
        charge(
          owner.url,
          "/charges",
          amount,
          `${DBOS.workflowID}:${DBOS.stepID}:${DBOS.stepStatus?.currentAttempt}`,
        ),
      { name: "charge", ...retries },
    ),
  { name: "handRolled" },
);
const unguarded = DBOS.registerWorkflow(
  async (amount: number) => runStep(harness, unguardedTool, { amount }, retries),
  { name: "unguarded" },
);
const unguardedBare = DBOS.registerWorkflow(
  async (amount: number) =>
    DBOS.runStep(() => charge(owner.url, "/unguarded", amount, undefined), { name: "charge", ...retries }),
  { name: "unguardedBare" },
);
/** callTool inside a registered step of the user's own, with the shouldRetry it needs. */
const ownStep = DBOS.registerStep(async (amount: number) => callTool(harness, chargeTool, { amount }), {
  name: "ownStep",
  ...retries,
  shouldRetry: retryUnlessOutcomeUnknown(),
});
const withOwnStep = DBOS.registerWorkflow(
  async (amount: number) => {
    const first = await ownStep(amount);
    const second = await ownStep(amount);
    return [first, second];
  },
  { name: "withOwnStep" },
);

const bigint = DBOS.registerWorkflow(
  async (amount: number) => runStep(harness, bigintTool, { amount }, retries),
  { name: "bigint" },
);
/** The deprecated name still stops on every final failure. */
const bigintOwnStep = DBOS.registerStep(
  async (amount: number) => {
    bigintAttempts += 1;
    return callTool(harness, bigintTool, { amount });
  },
  { name: "bigintOwnStep", ...retries, shouldRetry: retryUnlessOutcomeUnknown() },
);
const bigintInOwnStep = DBOS.registerWorkflow(async (amount: number) => bigintOwnStep(amount), {
  name: "bigintInOwnStep",
});

const identities = DBOS.registerWorkflow(
  async () => [
    await DBOS.runStep(async () => stepIdentity()),
    await DBOS.runStep(async () => stepIdentity()),
  ],
  { name: "identities" },
);

(service.skip ? describe.skip : describe)("idemkey/dbos on PostgreSQL", () => {
  beforeAll(async () => {
    owner = await startOwner({
      effectsFile: join(dir, "effects.jsonl"),
      afterEffect: (n) => (drop.has(n) ? "drop" : undefined),
    });
    // DBOS logs every failed step; these failures are the ones the tests provoke.
    const silent = () => {};
    DBOS.setConfig({
      name: "idemkey-test",
      systemDatabaseUrl: dbUrl,
      logLevel: "error",
      logger: { info: silent, debug: silent, warn: silent, error: silent },
    });
    await DBOS.launch();
    pool = new pg.Pool({ connectionString: dbUrl, max: 4 });
    harness = harnessFor();
  }, 120_000);
  afterAll(async () => {
    await DBOS.shutdown().catch(() => {});
    await pool?.end();
    await owner?.close();
    const admin = new pg.Client({ connectionString: service.url });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  /** Runs a workflow whose first request to the owner takes effect and loses its reply. */
  async function run<T>(workflow: (amount: number) => Promise<T>, amount: number, loseReply = true) {
    const before = owner.effects().length;
    drop.clear();
    if (loseReply) drop.add(before + 1);
    const id = `wf-${randomBytes(4).toString("hex")}`;
    const handle = await DBOS.startWorkflow(workflow, { workflowID: id })(amount);
    const outcome = await handle.getResult().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    return { id, outcome, effects: owner.effects().slice(before) };
  }

  it("a step that took effect and lost its reply is retried by DBOS under the same key: one effect", async () => {
    const { id, outcome, effects } = await run(withIdemkey, 700);
    const key = idempotencyKey(id, "charge", { amount: 700 }, { step: 0 });
    expect(effects).toEqual([{ key, body: { amount: 700 } }]);
    expect(owner.requests.filter((r) => r.key === key)).toHaveLength(2); // DBOS did retry: the repeat was replayed
    expect(outcome).toEqual({ value: { id: expect.any(String), amount: 700 } });
  });

  it("(without idemkey) the hand-rolled workflow:step:attempt key changes on DBOS's retry: two effects", async () => {
    const { id, outcome, effects } = await run(handRolled, 701);
    expect(effects.map((e) => e.key)).toEqual([`${id}:0:1`, `${id}:0:2`]);
    expect(outcome).toEqual({ value: { id: expect.any(String), amount: 701 } });
  });

  it("an unguarded step that may have taken effect ends the workflow with OutcomeUnknownError, not a retry", async () => {
    const { outcome, effects } = await run(unguarded, 702);
    expect(effects).toHaveLength(1);
    expect(outcome).toHaveProperty("error");
    const error = (outcome as { error: unknown }).error;
    expect(error).toBeInstanceOf(OutcomeUnknownError);
  });

  it("(without idemkey) the same unguarded step is retried by DBOS: two effects", async () => {
    const { outcome, effects } = await run(unguardedBare, 703);
    expect(effects).toHaveLength(2);
    expect(outcome).toHaveProperty("value");
  });

  it("callTool in a registered step: each step of the workflow has its own key, stable across DBOS's retry", async () => {
    const { id, outcome, effects } = await run(withOwnStep, 704);
    const keys = [0, 1].map((step) => idempotencyKey(id, "charge", { amount: 704 }, { step }));
    expect(effects.map((e) => e.key)).toEqual(keys);
    expect(outcome).toHaveProperty("value");
  });

  it("a keyed tool whose result is not JSON: runStep does not retry it, the workflow ends in the original error", async () => {
    const { id, outcome, effects } = await run(bigint, 705, false);
    expect(effects).toEqual([
      { key: idempotencyKey(id, "chargeBigint", { amount: 705 }, { step: 0 }), body: { amount: 705 } },
    ]);
    expect((outcome as { error?: unknown }).error).toBeInstanceOf(CanonicalizationError);
  });

  it("the same in the user's own step with shouldRetry: retryUnlessOutcomeUnknown(): one attempt", async () => {
    const attemptsBefore = bigintAttempts;
    const { outcome, effects } = await run(bigintInOwnStep, 706, false);
    expect(bigintAttempts - attemptsBefore).toBe(1);
    expect(effects).toHaveLength(1);
    expect((outcome as { error?: unknown }).error).toBeInstanceOf(CanonicalizationError);
  });

  it("a workflow id started again is the same run (DBOS returns it): one effect; a new id is a new run", async () => {
    const before = owner.effects().length;
    drop.clear();
    const id = `wf-${randomBytes(4).toString("hex")}`;
    for (const workflowID of [id, id, `${id}-next`]) {
      const handle = await DBOS.startWorkflow(withIdemkey, { workflowID })(707);
      await handle.getResult();
    }
    expect(owner.effects().slice(before)).toEqual(
      [id, `${id}-next`].map((workflowID) => ({
        key: idempotencyKey(workflowID, "charge", { amount: 707 }, { step: 0 }),
        body: { amount: 707 },
      })),
    );
  });

  it("stepIdentity() in a step: the workflow id and the step's position, for a key without the ledger", async () => {
    const handle = await DBOS.startWorkflow(identities, { workflowID: "wf-identities" })();
    expect(await handle.getResult()).toEqual([
      { taskId: "wf-identities", step: 0 },
      { taskId: "wf-identities", step: 1 },
    ]);
  });

  it("callTool outside a DBOS step is a TypeError that says where it must run", async () => {
    await expect(callTool(harness, chargeTool, { amount: 1 })).rejects.toThrow(/inside a DBOS step/);
  });
});
