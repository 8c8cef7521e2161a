import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Multi-process and crash tests spawn real children; give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two test files at a time even on 2 cores (Vitest's default is one fewer than the cores: one file at a time
    // there). The suite waits on servers, children and timers far more than it computes: on 2 cores the Node 20
    // run took 914 s one file at a time and 448 s two at a time, every test passing both ways.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Node 22 prints an ExperimentalWarning in every worker that opens node:sqlite; a passing run is quiet on stderr.
    // Warnings idemkey emits (IdemkeyWarning) are not of that type, and the tests that expect them catch them.
    execArgv: ["--disable-warning=ExperimentalWarning"],
    // .ci/run reads the counts from the JSON report rather than from terminal output.
    reporters: process.env.CI
      ? ["default", ["json", { outputFile: ".tmp/vitest-report.json" }]]
      : ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "node",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/workers/**", "test/workers-nocompat/**"],
        },
      },
      // Inside workerd: idemkey/cloudflare's stores on real Durable Objects and D1, the Agents SDK example.
      "test/workers/vitest.config.ts",
      // workerd with no Node compatibility at all: the core's keys and one harness call, on the pure-JS SHA-256.
      "test/workers-nocompat/vitest.config.ts",
    ],
  },
});
