import { type BuildOptions, build } from "esbuild";

/**
 * Bundles for plain Node as the bench runs compiled code: one ESM file, packages left to node_modules (as a user's
 * build runs the published package and its peers), no esbuild `__name` per closure as under tsx.
 */
export async function bundleForNode(options: BuildOptions): Promise<void> {
  await build({
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    logLevel: "error",
    ...options,
  });
}
