import { defineConfig } from "vitest/config";

/**
 * `npm run test:chaos`: the big chaos run (`*.big.ts`), kept out of `npm test`'s `*.test.ts`. One file at a time,
 * since each run already keeps every core busy with its worker processes.
 */
export default defineConfig({
  test: {
    include: ["test/chaos/**/*.big.ts"],
    testTimeout: 1_800_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
