import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** How the supervisor starts a worker process. */
export interface WorkerEntry {
  script: string;
  execArgv: string[];
}

/** The little of esbuild's API used here, typed locally: esbuild is tsx's dependency, not this package's. */
interface Esbuild {
  build(options: object): Promise<unknown>;
}
interface PluginBuild {
  onResolve(
    options: { filter: RegExp },
    callback: (args: ResolveArgs) => Promise<ResolveResult | undefined>,
  ): void;
  resolve(
    path: string,
    options: { kind: string; resolveDir: string; pluginData: unknown },
  ): Promise<{ path: string; errors: unknown[] }>;
}
interface ResolveArgs {
  path: string;
  kind: string;
  resolveDir: string;
  pluginData: unknown;
}
type ResolveResult = { path: string; external: true } | { errors: unknown[] };

const SOURCE = fileURLToPath(new URL("./worker/main.ts", import.meta.url));
const requireHere = createRequire(import.meta.url);

/**
 * Bundles the worker into `dir` with the esbuild that tsx runs on, so that each worker starts as plain JavaScript:
 * about a third of the CPU of loading the TypeScript through tsx in every process, which adds up when a chaos run
 * restarts hundreds of killed workers on two cores. Packages stay outside the bundle, imported by absolute URL
 * from this checkout's node_modules. Falls back to the TypeScript through tsx's loader if anything goes wrong.
 */
export async function workerEntry(dir: string): Promise<WorkerEntry> {
  const tsx = requireHere.resolve("tsx");
  const fallback: WorkerEntry = { script: SOURCE, execArgv: ["--import", pathToFileURL(tsx).href] };
  try {
    const esbuild = (await import(pathToFileURL(createRequire(tsx).resolve("esbuild")).href)) as Esbuild;
    const script = join(dir, "worker.mjs");
    await esbuild.build({
      entryPoints: [SOURCE],
      outfile: script,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      logLevel: "silent",
      plugins: [
        {
          name: "packages-by-absolute-url",
          setup(build: PluginBuild) {
            build.onResolve({ filter: /^[^./]/ }, async (args) => {
              if (args.pluginData === "inner" || args.path.startsWith("node:")) return undefined;
              const found = await build.resolve(args.path, {
                kind: args.kind,
                resolveDir: args.resolveDir,
                pluginData: "inner",
              });
              if (found.errors.length > 0) return { errors: found.errors };
              return { path: pathToFileURL(found.path).href, external: true };
            });
          },
        },
      ],
    });
    return { script, execArgv: [] };
  } catch {
    return fallback;
  }
}
