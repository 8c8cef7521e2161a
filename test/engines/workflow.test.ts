import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildWorkflowTests, setupWorkflowTests, teardownWorkflowTests } from "@workflow/vitest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start } from "workflow/api";
import { idempotencyKey } from "../../src/index.js";
import { type Owner, startOwner } from "./owner.js";

/**
 * The Workflow DevKit's own in-process test runtime (@workflow/vitest's build and setup, over @workflow/world-local):
 * the fixture app's `"use workflow"` and `"use step"` functions are compiled by the DevKit's SWC transform and run
 * with the local world's queue, retries and event log, with no server.
 */
const app = fileURLToPath(new URL("./fixtures/workflow-app/", import.meta.url));
const root = fileURLToPath(new URL("../../", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "idemkey-workflow-"));
// The bundles must sit inside the project, where they resolve `workflow` from its node_modules.
const outDir = join(root, ".tmp", `workflow-${randomBytes(4).toString("hex")}`);
const options = { cwd: app, outDir, dataDir: join(dir, "data") };
const attemptsFile = join(dir, "attempts.txt");
let owner: Owner;
const drop = new Set<number>();

/** The runtime logs each FatalError a step fails with to console.error; those are the ones the tests provoke. */
const consoleError = console.error;
const expected = /^\[Workflow\] (Encountered FatalError while executing step|Error while running workflow)/;

beforeAll(async () => {
  console.error = (...args: unknown[]) => {
    if (typeof args[0] === "string" && expected.test(args[0])) return;
    consoleError(...args);
  };
  owner = await startOwner({
    effectsFile: join(dir, "effects.jsonl"),
    afterEffect: (n) => (drop.has(n) ? "drop" : undefined),
  });
  process.env.IDEMKEY_WORKFLOW_OWNER_URL = owner.url;
  process.env.IDEMKEY_WORKFLOW_ATTEMPTS_FILE = attemptsFile;
  await buildWorkflowTests(options);
  await setupWorkflowTests(options);
}, 120_000);

afterAll(async () => {
  console.error = consoleError;
  await teardownWorkflowTests().catch(() => {});
  await owner?.close();
  rmSync(outDir, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** Starts a workflow of the fixture app with the owner losing the reply of its next effect, and awaits it. */
async function runWithLostReply(workflow: string, amount: number, loseReply = true) {
  const before = owner.effects().length;
  drop.clear();
  if (loseReply) drop.add(before + 1);
  const run = await start({ workflowId: `workflow//./workflows//${workflow}` }, [amount]);
  const outcome = await run.returnValue.then(
    (value: unknown) => ({ value }),
    (error: unknown) => ({ error }),
  );
  return { runId: run.runId, outcome, effects: owner.effects().slice(before) };
}

describe("idemkey/workflow in the Workflow DevKit's local world", () => {
  it("a step that took effect and lost its reply is retried by the runtime under the same key: one effect", async () => {
    const { runId, outcome, effects } = await runWithLostReply("withIdemkey", 1100);
    expect(outcome).toHaveProperty("value");
    const { receipt, stepId } = (outcome as { value: { receipt: unknown; stepId: string } }).value;
    const key = idempotencyKey(runId, "charge", { amount: 1100 }, { step: stepId });
    expect(effects).toEqual([{ key, body: { amount: 1100 } }]);
    expect(owner.requests.filter((r) => r.key === key)).toHaveLength(2); // the runtime did retry; the owner replayed
    expect(receipt).toEqual({ id: expect.any(String), amount: 1100 });
  });

  it("(without idemkey) a key minted inside the step is new on the retry: two effects", async () => {
    const { outcome, effects } = await runWithLostReply("bare", 1101);
    expect(outcome).toHaveProperty("value");
    expect(effects).toHaveLength(2);
  });

  it("an unguarded step that may have taken effect fails the run with a FatalError: one effect", async () => {
    const { outcome, effects } = await runWithLostReply("unguarded", 1102);
    expect(effects).toHaveLength(1);
    expect(outcome).toHaveProperty("error");
    expect(String((outcome as { error: unknown }).error)).toContain("is unknown");
  });

  it("(without idemkey) the same unguarded step is retried: two effects", async () => {
    const { outcome, effects } = await runWithLostReply("bareUnguarded", 1103);
    expect(outcome).toHaveProperty("value");
    expect(effects).toHaveLength(2);
  });

  it("a keyed tool whose result is not JSON: one attempt of the step, the run fails with a FatalError", async () => {
    const { outcome, effects } = await runWithLostReply("bigint", 1104, false);
    const attempts = existsSync(attemptsFile)
      ? readFileSync(attemptsFile, "utf8")
          .split("\n")
          .filter((line) => line === "1104")
      : [];
    expect(attempts).toHaveLength(1);
    expect(effects).toHaveLength(1);
    expect(outcome).toHaveProperty("error");
    expect(String((outcome as { error: unknown }).error)).toContain("is not a JSON value");
  });
});
