import { fileURLToPath } from "node:url";
import { runInNewContext } from "node:vm";
import { build } from "esbuild";

type Errors = typeof import("../../src/errors/index.js");

/**
 * idemkey's error module evaluated again in a new `node:vm` context: another realm, with its own `Error`, `Object`
 * and classes, as a second copy of the package (or a worker-made error handed over by a test runner) would be. An
 * error made there fails every `instanceof` in this realm, which is what the guards must survive.
 */
export async function errorsInAnotherRealm(): Promise<Errors> {
  const bundled = await build({
    entryPoints: [fileURLToPath(new URL("../../src/errors/index.ts", import.meta.url))],
    bundle: true,
    write: false,
    format: "cjs",
    platform: "neutral",
    logLevel: "silent",
  });
  const module = { exports: {} as Errors };
  runInNewContext(bundled.outputFiles[0]!.text, { module, exports: module.exports });
  return module.exports;
}
