import { afterAll, beforeAll } from "vitest";
import { workflowDriver, workflowEngine } from "./drivers/workflow.js";
import { testEngine } from "./engines.js";

const engine = workflowEngine();
beforeAll(() => engine.start(), 120_000);
afterAll(() => engine.stop(), 60_000);

testEngine(workflowDriver);
