import { afterAll, beforeAll } from "vitest";
import { needsNode } from "../../support/node-version.js";
import type { EngineDriver } from "./engines.js";
import { testEngine } from "./engines.js";

// The Restate SDK needs Node >= 22 (Promise.withResolvers): the endpoint runs in this process, so this one must be
// (test/engines/restate.test.ts runs it in a Node 22 child on every leg).
const node = needsNode(22, "the Restate contract, whose endpoint runs in this process").skip
  ? "old"
  : undefined;
const name = "run (Restate handler)";
// The SDK reads its log level when it loads; it logs each invocation, and each failed block at WARN: the table's
// failures are expected and checked.
process.env.RESTATE_LOGGING = "ERROR";
const { restateDriver, restateEngine } =
  node === undefined
    ? await import("./drivers/restate.js")
    : { restateDriver: { name, execute: () => Promise.reject() } as EngineDriver, restateEngine: undefined };

if (restateEngine !== undefined) {
  beforeAll(() => restateEngine.start(), 120_000);
  afterAll(() => restateEngine.stop(), 60_000);
}

testEngine(
  node === undefined
    ? restateDriver
    : { ...restateDriver, skip: `the endpoint runs in this process, and the Restate SDK needs Node >= 22` },
);
