import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { privateRedis, redisServerAvailable } from "../test/support/redis-server.js";
import { bundleForNode } from "./bundle.js";
import { handlerIterations } from "./middleware-handler.js";

/**
 * `npm run bench [section...]`: every section by default; figures go to BENCHMARKS.md by hand, with the machine.
 *
 * Each section runs in a process of its own, importing only its own module. One process for all of them let one
 * section's fixtures slow another: the key section's 8,192 objects of one-off member names (65,536 shapes) made
 * every JSON.parse in the harness section's replays twice as slow, for the old code and the new alike.
 */
const sections: Record<string, () => Promise<void>> = {
  key: async () => (await import("./key.js")).benchKey(),
  harness: async () => (await import("./harness.js")).benchHarness(),
  floors: async () => (await import("./floors.js")).benchFloors(),
  powertools: async () => (await import("./powertools.js")).benchPowertools(),
  dynamodb: async () => (await import("./dynamodb.js")).benchDynamo(),
  "redis-cost": async () => (await import("./redis-cost.js")).benchRedisCost(),
  peers: async () => (await import("./peers.js")).benchPeers(),
  middleware: async () => (await import("./middleware.js")).benchMiddleware(),
  fingerprint: async () => (await import("./fingerprint.js")).benchFingerprint(),
  "owner-steps": async () => (await import("./owner-steps.js")).benchOwnerSteps(),
  "peers-steps": async () => (await import("./peers-steps.js")).benchPeersSteps(),
  "scale-out": async () => (await import("./scale-out.js")).benchScaleOut(),
  scale: async () => (await import("./scale.js")).benchScale(),
  retention: async () => (await import("./scale.js")).benchRetention(),
  syscalls: async () => (await import("./syscalls.js")).benchSyscalls(),
  checkpoints: async () => (await import("./checkpoints.js")).benchCheckpoints(),
  otel: async () => (await import("./otel.js")).benchOtel(),
  ledger: async () => (await import("./ledger.js")).benchLedger(),
  inspector: async () => (await import("./inspector.js")).benchInspector(),
  runtimes: async () => (await import("./runtimes.js")).benchRuntimes(),
};

/**
 * Sections that time idemkey's code in their own process, run as plain JavaScript (bundled by esbuild, packages left
 * to node_modules) like the built package users run: under tsx every closure idemkey makes goes through esbuild's
 * `__name` helper, a cost the JavaScript peers (Powertools) never pay. The other sections keep tsx.
 */
const COMPILED: Record<string, { module: string; fn: string; nodeFlags?: string[] }> = {
  powertools: { module: "./powertools.ts", fn: "benchPowertools" },
  "redis-cost": { module: "./redis-cost.ts", fn: "benchRedisCost" },
  // gc() before each count of bytes allocated.
  "owner-steps": { module: "./owner-steps.ts", fn: "benchOwnerSteps", nodeFlags: ["--expose-gc"] },
  "peers-steps": { module: "./peers-steps.ts", fn: "benchPeersSteps", nodeFlags: ["--expose-gc"] },
};

async function compiledSection(name: string): Promise<string> {
  const { module, fn } = COMPILED[name]!;
  const dir = fileURLToPath(new URL(".", import.meta.url));
  const outfile = join(dir, "..", ".tmp", "bench", `section-${name}-${process.pid}.mjs`);
  mkdirSync(dirname(outfile), { recursive: true });
  await bundleForNode({
    stdin: {
      contents: `import { ${fn} } from "${module}";\nawait ${fn}();\n`,
      resolveDir: dir,
      loader: "ts",
    },
    outfile,
  });
  return outfile;
}

const CHILD = "IDEMKEY_BENCH_SECTION";
const only = process.env[CHILD];
if (only !== undefined) {
  await sections[only]!();
} else {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !(name in sections));
  if (unknown.length > 0) {
    console.error(`bench: unknown section ${unknown.join(", ")}; known: ${Object.keys(sections).join(", ")}`);
    process.exit(2);
  }
  // The load average goes with the figures: on a shared machine it says how much they are worth.
  const load = () =>
    loadavg()
      .map((n) => n.toFixed(2))
      .join(" ");
  console.log(
    `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, load ${load()}`,
  );
  // One handler iteration count for the whole run, measured here once and inherited by every section and server.
  console.log(
    `handler work: ${handlerIterations()} PBKDF2 iterations (~200 µs of CPU, fixed for every contender)`,
  );
  // A redis-server of the bench's own on a free port, unless one is named: the shared one's other clients would
  // count in its INFO cpu and commandstats, which the Redis rows read as the store's own cost.
  const redis =
    process.env.IDEMKEY_REDIS_URL === undefined && redisServerAvailable() ? await privateRedis() : undefined;
  if (redis !== undefined) {
    process.env.IDEMKEY_REDIS_URL = redis.url;
    console.log(`redis: a private redis-server at ${redis.url} (no persistence)`);
  }
  let failed = false;
  for (const name of Object.keys(sections)) {
    if (wanted.length > 0 && !wanted.includes(name)) continue;
    // The same node and loader (tsx's flags are in execArgv), this file, told which section to run; or the
    // section compiled, under plain node.
    const argv =
      name in COMPILED
        ? [...(COMPILED[name]!.nodeFlags ?? []), await compiledSection(name)]
        : [...process.execArgv, fileURLToPath(import.meta.url)];
    const child = spawnSync(process.execPath, argv, {
      stdio: "inherit",
      env: { ...process.env, [CHILD]: name },
    });
    if (child.status !== 0) {
      console.error(`bench: section ${name} failed (${child.signal ?? `exit ${child.status}`})`);
      failed = true;
    }
  }
  await redis?.stop();
  console.log(`\nload average at the end: ${load()}`);
  if (failed) process.exit(1);
}
