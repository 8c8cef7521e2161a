/*
 * workerd with no Node compatibility. @cloudflare/vitest-pool-workers cannot run this leg: it switches nodejs_compat
 * on in the Worker it runs the tests in, whatever the Worker's config says. So the tests here run in Node and start
 * workerd themselves through Miniflare (the same workerd), on the Worker of wrangler.jsonc bundled by esbuild, with
 * its date and its flags (none). One project of the root vitest.config.ts, so that `npm test` runs it.
 */
import { defineProject } from "vitest/config";

export default defineProject({
  root: import.meta.dirname,
  test: {
    name: "workerd-nocompat",
    include: ["**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
