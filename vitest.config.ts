import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Multi-process and crash tests spawn real children; give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // .ci/run reads the counts from the JSON report rather than from terminal output.
    reporters: process.env.CI
      ? ["default", ["json", { outputFile: ".tmp/vitest-report.json" }]]
      : ["default"],
  },
});
