import { join } from "node:path";
import { bundleForNode } from "./bundle.js";

/**
 * IDEMKEY_BENCH_BEFORE=<dir>: a copy of an earlier commit's src/ (`git archive <commit> src | tar -x -C <dir>`),
 * bundled here into one module that the "idemkey before" contenders import, so that today's code and the earlier
 * one run in the same rounds and their ratio is paired like any other (issue 44's before and after).
 */
export async function bundleBefore(): Promise<string | undefined> {
  const dir = process.env.IDEMKEY_BENCH_BEFORE;
  if (dir === undefined) return undefined;
  const outfile = join(dir, "idemkey-before.mjs");
  await bundleForNode({
    stdin: {
      contents: [
        'export { idempotency } from "./src/express/index.ts";',
        'export { redisStore } from "./src/redis/index.ts";',
        'export { memoryStore } from "./src/store/memory.ts";',
      ].join("\n"),
      resolveDir: dir,
      loader: "ts",
    },
    outfile,
  });
  return outfile;
}
