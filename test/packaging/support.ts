import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../../", import.meta.url));
const tsc = join(root, "node_modules/typescript/bin/tsc");

/**
 * Builds the package into a folder of its own (never the checkout's dist/, which other runs may be writing) and
 * packs it as `npm pack` would publish it; returns the tarball's path.
 */
export function packPackage(dir: string): string {
  const stage = join(dir, "stage");
  mkdirSync(stage, { recursive: true });
  execFileSync(
    process.execPath,
    [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", join(stage, "dist")],
    {
      cwd: root,
      stdio: "pipe",
    },
  );
  for (const entry of ["package.json", "README.md", "CHANGELOG.md", "LICENSE", "test-vectors"]) {
    cpSync(join(root, entry), join(stage, entry), { recursive: true });
  }
  // --ignore-scripts: the prepack script builds into dist/ of a checkout; this stage is built already.
  const out = execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir, stage], {
    cwd: dir,
    encoding: "utf8",
  });
  const [{ filename }] = JSON.parse(out) as [{ filename: string }];
  return join(dir, filename);
}

/**
 * A project folder with the tarball installed as node_modules/idemkey, and `links` from the checkout's node_modules:
 * all of them, none, or all but one package (`{ except: "@langchain/core" }`). A linked package finds its own
 * dependencies in the checkout (Node resolves a symlink to its real path), so only idemkey's imports miss the one left out.
 */
export function project(dir: string, tarball: string, links: "all" | "none" | { except: string }): string {
  const modules = join(dir, "node_modules");
  mkdirSync(join(modules, "idemkey"), { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  execFileSync("tar", ["-xzf", tarball, "-C", join(modules, "idemkey"), "--strip-components=1"]);
  if (links !== "none") {
    const except = links === "all" ? undefined : links.except;
    const from = join(root, "node_modules");
    for (const entry of readdirSync(from)) {
      if (entry.startsWith(".") || entry === "idemkey" || entry === except) continue;
      if (entry.startsWith("@")) {
        mkdirSync(join(modules, entry), { recursive: true });
        for (const scoped of readdirSync(join(from, entry))) {
          if (`${entry}/${scoped}` === except) continue;
          symlinkSync(join(from, entry, scoped), join(modules, entry, scoped));
        }
      } else {
        symlinkSync(join(from, entry), join(modules, entry));
      }
    }
  }
  return dir;
}

/**
 * Runs the checkout's TypeScript on a project's `config` (tsconfig.json), with `node`; returns its diagnostics, one
 * per line ("" when it compiles).
 */
export function typecheck(dir: string, node = process.execPath, config = "tsconfig.json"): string {
  try {
    execFileSync(node, [tsc, "-p", join(dir, config)], { cwd: dir, encoding: "utf8" });
    return "";
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}
