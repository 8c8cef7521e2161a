import { fileURLToPath } from "node:url";

/**
 * The arguments that make `process.execPath` run a TypeScript file, so that a test's children run on the runtime
 * the test runs on (the Bun and Deno legs of .ci/run): Node through tsx, Bun natively, Deno with npm packages from
 * node_modules and the `.js` specifiers of src/ resolved to their `.ts` files.
 *
 * A Node child is told not to print ExperimentalWarning: Node 22 prints one for `node:sqlite` in every child that
 * opens a nodeSqliteStore, and children share the test's stderr, where a passing run prints nothing.
 */
export function tsChildArgs(script: URL | string): string[] {
  const path = typeof script === "string" ? script : fileURLToPath(script);
  const versions = process.versions as Record<string, string | undefined>;
  if (versions.bun !== undefined) return [path];
  if (versions.deno !== undefined) {
    return ["run", "-A", "--quiet", "--node-modules-dir=manual", "--sloppy-imports", path];
  }
  return ["--disable-warning=ExperimentalWarning", "--import", "tsx", path];
}
