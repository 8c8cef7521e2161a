import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildWorkflowTests, setupWorkflowTests, teardownWorkflowTests } from "@workflow/vitest";
import { start } from "workflow/api";
import type { HarnessOptions } from "../../../../src/index.js";
import type { EngineDriver } from "../engines.js";
import { ARGS, type World } from "../world.js";

/** What the fixture's step reads of the execution running now. */
export interface WorkflowExecution {
  /** The world's options for a new worker's harness, which the step makes with its own copy of idemkey. */
  harnessOptions: HarnessOptions;
  name: string;
  effect: World["spec"]["effect"];
  /** The tool's body: the world's owner, with the key the step's tool was handed. */
  act(key: string | undefined): Promise<unknown>;
  args: object;
  /** How many times the runtime ran the step (its own retries included). */
  attempts: number;
}

const app = fileURLToPath(new URL("../fixtures/workflow-app/", import.meta.url));
const root = fileURLToPath(new URL("../../../../", import.meta.url));

/** The DevKit's in-process test runtime over its local world, as test/engines/workflow.test.ts sets it up. */
export function workflowEngine() {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-contract-workflow-"));
  // The bundles must sit inside the project, where they resolve `workflow` from its node_modules.
  const outDir = join(root, ".tmp", `contract-workflow-${randomBytes(4).toString("hex")}`);
  const options = { cwd: app, outDir, dataDir: join(dir, "data") };
  // The runtime logs each FatalError a step fails with; the table's failures are expected and checked.
  const consoleError = console.error;
  const expected = /^\[Workflow\] (Encountered FatalError while executing step|Error while running workflow)/;
  return {
    async start() {
      console.error = (...args: unknown[]) => {
        if (typeof args[0] === "string" && expected.test(args[0])) return;
        consoleError(...args);
      };
      await buildWorkflowTests(options);
      await setupWorkflowTests(options);
    },
    async stop() {
      console.error = consoleError;
      await teardownWorkflowTests().catch(() => {});
      rmSync(outDir, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const NO_ATTEMPT_FROM_OUTSIDE =
  "the runtime makes a step's attempts inside one run (start() is always a new run id), and a test cannot run " +
  "attempt 2 of a run's step from outside; test/engines/workflow.test.ts covers the runtime's own retry after a " +
  "lost reply";

/**
 * `callTool` in a `"use step"` of the DevKit's local world: each execution is `start()`, a new run. "Would retry" is
 * the runtime running the step more than once.
 */
export const workflowDriver: EngineDriver = {
  name: "callTool (Workflow DevKit step)",
  cannot: {
    "replay of the step": NO_ATTEMPT_FROM_OUTSIDE,
    "crash after the effect": NO_ATTEMPT_FROM_OUTSIDE,
    "run identity": NO_ATTEMPT_FROM_OUTSIDE,
  },
  async execute(world) {
    const execution: WorkflowExecution = {
      harnessOptions: world.harnessOptions(),
      name: world.spec.name,
      effect: world.spec.effect,
      act: (key) => world.owner.act(key),
      args: ARGS,
      attempts: 0,
    };
    const global = globalThis as { idemkeyContract?: WorkflowExecution };
    global.idemkeyContract = execution;
    try {
      const run = await start({ workflowId: "workflow//./workflows//charge" }, []);
      return { value: await run.returnValue };
    } catch (error) {
      return { error, retryable: execution.attempts > 1 };
    } finally {
      delete global.idemkeyContract;
    }
  },
};
