import { defineConfig } from "vitest/config";

/**
 * The Bun and Deno legs of .ci/run: Vitest itself started on that runtime (`bun --bun node_modules/vitest/vitest.mjs`
 * or `deno run -A --node-modules-dir=manual node_modules/vitest/vitest.mjs`), its workers forked from it, so they run
 * there too; test/runtimes/runtime.check.ts proves both. IDEMKEY_RUNTIME (bun or deno) says which leg this is.
 *
 * What runs: the key (vectors, RFC 8785, the hash paths), the store contract on memory, node:sqlite, sqliteStore on
 * better-sqlite3 13 (Node-API; 12 is a nan addon neither runtime loads), PostgreSQL and
 * Redis (ioredis and node-redis), fetch's lost reply as this runtime throws it (retried by the harness, a
 * NetworkError from idempotentFetch), the harness's race and SIGKILL crash cases on node:sqlite with children on the
 * same runtime, and the owner engine through Hono (`app.request`, and Bun.serve / Deno.serve), Express and Fastify.
 * What does not is excluded by name below, with the reason, printed once at the start.
 */
const runtime = process.env.IDEMKEY_RUNTIME;
if (runtime !== "bun" && runtime !== "deno") {
  throw new Error("test/runtimes/vitest.config.ts: set IDEMKEY_RUNTIME to bun or deno (see .ci/runtimes.sh)");
}
const versions = process.versions as Record<string, string | undefined>;
const runner = versions.bun !== undefined ? "bun" : versions.deno !== undefined ? "deno" : "node";

/** Tests left out on both runtimes: a part of each name, and why. */
const EXCLUDED: { name: string; reason: string }[] = [
  {
    name: "better-sqlite3 processes racing",
    reason: "the children open better-sqlite3 12, a nan addon (below); the same race runs on node:sqlite",
  },
  {
    name: "better-sqlite3 a process killed",
    reason:
      "the harness's races and crashes on better-sqlite3 12, a nan addon: Bun refuses it ('not yet supported in Bun'), Deno loads only Node-API addons; they run on node:sqlite, and sqliteStore's contract runs on better-sqlite3 13 (Node-API)",
  },
  {
    name: "sqlite store",
    reason: "the owner suites on sqliteStore over better-sqlite3 12, a nan addon (the memory ones run)",
  },
  { name: "shares the table with sqliteStore", reason: "opens the file with better-sqlite3 as well" },
  {
    name: "nodeSqliteStore: hot path and locks",
    reason:
      "its lock-holding children are `node --import tsx` scripts on better-sqlite3; the contract suite and the harness races cover node:sqlite here",
  },
  {
    name: "store contract across processes",
    reason:
      "13 child processes a store, spawned through tsChildArgs (so they would run on the leg's runtime), but not yet run on Bun or Deno; the Node legs run it for every shareable store",
  },
  {
    name: "sends no PEXPIRE for a completion",
    reason:
      "starts a private redis-server (its command counters must hold this test's alone): under Deno the start does not finish within the test's 30 s (not yet investigated); the Node legs run it",
  },
  {
    name: "nodeSqliteStore across processes",
    reason:
      "spawns `node --import tsx` children; the harness's race of processes on one key runs on node:sqlite instead",
  },
];

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const testNamePattern = new RegExp(`^(?!.*(?:${EXCLUDED.map((e) => literal(e.name)).join("|")})).*$`);

// Printed once (the config loads once in the runner), on stdout: loud in the log, and stderr stays quiet.
console.log(
  [
    `== ${runtime} leg: tests EXCLUDED by name (test/runtimes/vitest.config.ts):`,
    ...EXCLUDED.map((e) => `   - "${e.name}": ${e.reason}`),
  ].join("\n"),
);

export default defineConfig({
  test: {
    include: [
      "test/runtimes/runtime.check.ts",
      "test/key/*.test.ts",
      "test/fetch/network-failure.test.ts",
      "test/stores/memory.test.ts",
      "test/stores/node-sqlite.test.ts",
      "test/stores/sqlite13.test.ts",
      "test/stores/postgres.test.ts",
      "test/stores/redis.test.ts",
      "test/harness/processes.test.ts",
      "test/owner/adapters.test.ts",
      "test/owner/middleware.test.ts",
      "test/runtimes/hono-listener.check.ts",
    ],
    // Bundling and Chromium: a Node concern, run by the Node legs.
    exclude: ["test/key/neutral-bundle.test.ts"],
    testNamePattern,
    env: { IDEMKEY_RUNTIME: runtime, IDEMKEY_RUNNER_RUNTIME: runner },
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ["default", ["json", { outputFile: `.tmp/vitest-report-${runtime}.json` }]],
  },
});
