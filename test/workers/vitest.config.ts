/*
 * The tests that run inside workerd (the Cloudflare Workers runtime), through @cloudflare/vitest-pool-workers: the
 * Worker of wrangler.jsonc, with real SQLite behind its Durable Objects and D1, local and offline. One project of
 * the root vitest.config.ts, so that `npm test` runs it and its counts land in the same report.
 */
import { join } from "node:path";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineProject } from "vitest/config";

const here = import.meta.dirname;

export default defineProject({
  plugins: [quietly(() => cloudflareTest({ wrangler: { configPath: join(here, "wrangler.jsonc") } }))],
  root: here,
  test: {
    name: "workerd",
    include: ["**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});

/**
 * Calls `make` without the package's one-time notice that it was renamed (@cloudflare/vitest-plugin, not installed
 * here), which it prints on stderr for every run: a passing run prints nothing there.
 */
function quietly<T>(make: () => T): T {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (!String(args[0]).includes("has been renamed to @cloudflare/vitest-plugin")) warn(...args);
  };
  try {
    return make();
  } finally {
    console.warn = warn;
  }
}
