/*
 * Cold start in workerd beside Node's: a fresh runtime per run, from its launch to the first keyed call's result on
 * a store that persists (a Durable Object's SQLite in workerd, better-sqlite3 in Node). workerd's clocks stand still
 * while code runs (a Spectre mitigation), so every figure is measured from Node, on the wall clock.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { bundleForWorkerd } from "../examples/cloudflare-agents/runtime.js";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

const median = (values: number[]) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Rows of [runtime and store, launch-to-ready ms, first call ms, launch-to-result ms], medians of `runs`. */
export async function workerdColdStart(runs: number): Promise<string[][]> {
  const script = await bundleForWorkerd(here("./workerd-cold-worker.ts"));
  // Under the repository, so that the Node script's bare import of better-sqlite3 resolves.
  const scratch = here("../.tmp");
  mkdirSync(scratch, { recursive: true });
  const dir = mkdtempSync(join(scratch, "bench-cold-"));
  try {
    const ready: number[] = [];
    const call: number[] = [];
    const total: number[] = [];
    const kept: string[] = [];
    for (let i = 0; i < runs; i++) {
      const persist = join(dir, `workerd-${i}`);
      const start = performance.now();
      const mf = new Miniflare(
        convertV4MiniflareOptions({
          name: "cold",
          modules: true,
          script,
          compatibilityDate: "2026-08-22",
          compatibilityFlags: ["nodejs_compat"],
          durableObjects: { LEDGER: { className: "Ledger", useSQLite: true } },
          resourcePersistencePath: persist,
          telemetry: { enabled: false },
          cf: false,
          log: new Kept(kept),
          handleStructuredLogs: (entry) => kept.push(entry.message),
        }),
      );
      try {
        const url = await mf.ready;
        const up = performance.now();
        const result = (await (await fetch(url)).json()) as { n: number };
        const done = performance.now();
        if (result.n !== 1) throw new Error(`workerd: not one effect\n${kept.join("\n")}`);
        ready.push(up - start);
        call.push(done - up);
        total.push(done - start);
      } finally {
        await mf.dispose();
      }
    }

    // Node: the core and sqliteStore bundled as in the other cold-start rows, better-sqlite3 left to node_modules.
    const entry = join(dir, "entry.ts");
    writeFileSync(
      entry,
      `export * from ${JSON.stringify(here("../src/index.ts"))};\nexport { sqliteStore } from ${JSON.stringify(here("../src/sqlite/index.ts"))};\n`,
    );
    await build({
      entryPoints: [entry],
      bundle: true,
      platform: "node",
      format: "esm",
      minify: true,
      external: ["better-sqlite3"],
      outfile: join(dir, "core-sqlite.mjs"),
      logLevel: "silent",
    });
    const child = join(dir, "cold-sqlite.mjs");
    writeFileSync(
      child,
      `const t0 = performance.now();
const core = await import("./core-sqlite.mjs");
const t1 = performance.now();
let effects = 0;
const tool = core.defineTool({ name: "sendEmail", effect: "keyed", run: (args) => ({ sent: args.to, n: ++effects }) });
const harness = core.createHarness({ store: core.sqliteStore(process.argv[2]) });
const result = await harness.call("task-1", tool, { to: "ana@example.com" });
const t2 = performance.now();
if (result.n !== 1) throw new Error("not one effect");
console.log(JSON.stringify({ ready: performance.timeOrigin + t1, firstCall: t2 - t1 }));
`,
    );
    const nodeReady: number[] = [];
    const nodeCall: number[] = [];
    const nodeTotal: number[] = [];
    for (let i = 0; i < runs; i++) {
      const launched = performance.timeOrigin + performance.now();
      const out = spawnSync(process.execPath, [child, join(dir, `node-${i}.db`)], {
        encoding: "utf8",
        cwd: dir,
      });
      const exited = performance.timeOrigin + performance.now();
      if (out.status !== 0) throw new Error(`node: ${out.stderr}`);
      const { ready: at, firstCall } = JSON.parse(out.stdout) as { ready: number; firstCall: number };
      nodeReady.push(at - launched);
      nodeCall.push(firstCall);
      nodeTotal.push(exited - launched);
    }
    const row = (name: string, a: number[], b: number[], c: number[]) => [
      name,
      median(a).toFixed(0),
      median(b).toFixed(1),
      median(c).toFixed(0),
    ];
    return [
      row("workerd (Miniflare), durableObjectStore", ready, call, total),
      row(`node ${process.version}, sqliteStore`, nodeReady, nodeCall, nodeTotal),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Miniflare's own lines, kept for an error's message rather than printed. */
class Kept extends Log {
  constructor(private readonly lines: string[]) {
    super(LogLevel.WARN);
  }
  override log(message: string): void {
    this.lines.push(message);
  }
}
