import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { Bench } from "tinybench";
import { pureSha256Hex, sha256Hex } from "../src/key/hash.js";
import { canonicalCall, idempotencyKey } from "../src/key/index.js";
import { medianMicros } from "./key.js";
import { oneKb, sixtyFourKb, small } from "./payloads.js";
import { printTable } from "./table.js";
import { workerdColdStart } from "./workerd-cold.js";

/** The budget for the core's bundle, min+gzip (issue 29): what an edge function pays to import idemkey. */
const BUDGET_BYTES = 20 * 1024;
const RUNS = 7;

const source = (path: string) => fileURLToPath(new URL(`../src/${path}`, import.meta.url));

async function bundle(entry: string, minify: boolean): Promise<string> {
  const result = await build({
    entryPoints: [source(entry)],
    bundle: true,
    platform: "neutral",
    format: "esm",
    minify,
    write: false,
    logLevel: "silent",
    external: ["hono", "hono/*"],
  });
  return result.outputFiles[0]!.text;
}

/** Where .ci/runtimes.sh installs Bun and Deno; IDEMKEY_BUN and IDEMKEY_DENO override. */
function runtimeBinaries(): Record<string, { bin: string; args: (script: string) => string[] } | undefined> {
  const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "idemkey-rt", "node_modules");
  const bun = process.env.IDEMKEY_BUN ?? join(cache, "@oven/bun-linux-x64/bin/bun");
  const deno = process.env.IDEMKEY_DENO ?? join(cache, "@deno/linux-x64-glibc/deno");
  return {
    [`node ${process.version}`]: { bin: process.execPath, args: (script) => [script] },
    bun: existsSync(bun) ? { bin: bun, args: (script) => [script] } : undefined,
    deno: existsSync(deno) ? { bin: deno, args: (script) => ["run", "-A", "--quiet", script] } : undefined,
  };
}

const median = (values: number[]) => {
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/**
 * The core on edge runtimes: its bundle's size, what the pure-JS SHA-256 costs a key against node:crypto, and a
 * cold start (import of the bundle, createHarness, first keyed call on memoryStore) on Node, Bun and Deno.
 */
export async function benchRuntimes(): Promise<void> {
  // 1. Bundle size, esbuild for a neutral platform (no node: import), minified, gzip at its default level.
  const sizes: string[][] = [];
  let over = false;
  for (const [label, entry] of [
    ["idemkey (src/index.ts)", "index.ts"],
    ["idemkey/owner", "owner/index.ts"],
    ["idemkey/hono (hono external)", "hono/index.ts"],
  ] as const) {
    const min = await bundle(entry, true);
    const gz = gzipSync(min).byteLength;
    if (entry === "index.ts" && gz >= BUDGET_BYTES) over = true;
    sizes.push([label, (Buffer.byteLength(min) / 1024).toFixed(1), (gz / 1024).toFixed(1)]);
  }
  printTable(
    `bundle size, esbuild --bundle --minify, platform neutral (budget for the core: ${BUDGET_BYTES / 1024} KB min+gzip)`,
    ["entry", "min KB", "min+gzip KB"],
    sizes,
  );

  // 2. The key's hash through node:crypto and through the pure-JS SHA-256, on the same canonical bytes.
  const rows: string[][] = [];
  for (const [name, args] of [
    ["small args", small],
    ["~1 KB args", oneKb],
    ["~64 KB args", sixtyFourKb],
  ] as const) {
    const canonical = new TextEncoder().encode(canonicalCall("task-8812", "sendEmail", args));
    const bench = new Bench({ time: 400, warmup: true, warmupTime: 100 });
    bench.add("key, node:crypto", () => idempotencyKey("task-8812", "sendEmail", args));
    bench.add("key, pure-JS", () =>
      pureSha256Hex(new TextEncoder().encode(canonicalCall("task-8812", "sendEmail", args))),
    );
    bench.add("hash, node:crypto", () => sha256Hex(canonical));
    bench.add("hash, pure-JS", () => pureSha256Hex(canonical));
    await bench.run();
    const [kn, kp, hn, hp] = ["key, node:crypto", "key, pure-JS", "hash, node:crypto", "hash, pure-JS"].map(
      (t) => medianMicros(bench, t),
    ) as [number, number, number, number];
    rows.push([
      `${name} (${canonical.byteLength} B)`,
      kn.toFixed(2),
      kp.toFixed(2),
      (kp / kn).toFixed(2),
      hn.toFixed(2),
      hp.toFixed(2),
      (hp / hn).toFixed(2),
    ]);
  }
  printTable(
    "key derivation, median µs (key = canonical form + SHA-256; hash = SHA-256 of the canonical bytes alone)",
    ["args", "key node", "key pure", "x", "hash node", "hash pure", "x"],
    rows,
  );

  // 3. Cold start: a fresh process per run, timed inside it from before the import to the first call's result.
  const dir = mkdtempSync(join(tmpdir(), "idemkey-bench-runtimes-"));
  try {
    writeFileSync(join(dir, "core.mjs"), await bundle("index.ts", true));
    const script = join(dir, "cold.mjs");
    writeFileSync(
      script,
      `const t0 = performance.now();
const core = await import("./core.mjs");
const t1 = performance.now();
let effects = 0;
const tool = core.defineTool({ name: "sendEmail", effect: "keyed", run: (args) => ({ sent: args.to, n: ++effects }) });
const harness = core.createHarness({ store: core.memoryStore() });
const result = await harness.call("task-1", tool, { to: "ana@example.com" });
const t2 = performance.now();
if (result.n !== 1) throw new Error("not one effect");
console.log(JSON.stringify({ imported: t1 - t0, firstCall: t2 - t1, hash: core.hashImplementation }));
`,
    );
    const cold: string[][] = [];
    for (const [name, runtime] of Object.entries(runtimeBinaries())) {
      if (runtime === undefined) {
        cold.push([name, "not installed (.ci/runtimes.sh)", "", "", ""]);
        continue;
      }
      const inside: number[] = [];
      const calls: number[] = [];
      const wall: number[] = [];
      let hash = "";
      for (let i = 0; i < RUNS; i++) {
        const start = performance.now();
        const child = spawnSync(runtime.bin, runtime.args(script), { encoding: "utf8", cwd: dir });
        wall.push(performance.now() - start);
        if (child.status !== 0) throw new Error(`${name}: ${child.stderr}`);
        const out = JSON.parse(child.stdout) as { imported: number; firstCall: number; hash: string };
        inside.push(out.imported + out.firstCall);
        calls.push(out.firstCall);
        hash = out.hash;
      }
      cold.push([name, median(inside).toFixed(1), median(calls).toFixed(1), median(wall).toFixed(0), hash]);
    }
    printTable(
      `cold start, median of ${RUNS} processes: ms from before the import to the first keyed call's result on memoryStore`,
      ["runtime", "import+call ms", "of which call", "process wall ms", "hash"],
      cold,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  // 4. Cold start on a store that persists: workerd (started by Miniflare) on a Durable Object, Node on SQLite.
  const workerdRuns = Number(process.env.IDEMKEY_BENCH_WORKERD_RUNS ?? 5);
  printTable(
    `cold start on a persistent store, median of ${workerdRuns} launches, wall clock from Node: launch to ready (runtime up, module loaded), first keyed call (harness made on the store, claim, run, save), launch to result; Node's "to result" includes its exit`,
    ["runtime, store", "to ready ms", "first call ms", "to result ms"],
    await workerdColdStart(workerdRuns),
  );
  if (over) {
    console.error(
      `bench runtimes: the core's bundle is over its budget of ${BUDGET_BYTES / 1024} KB min+gzip`,
    );
    process.exit(1);
  }
}
