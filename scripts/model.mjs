// `npm run model`: model-checks the claim protocol (model/claim.pml) with spin. Each run generates the verifier
// (spin -a), compiles it with gcc and explores every state at the bounds below. The real protocol's configurations
// must end with 0 errors; each mutant (today's behaviours) must end with a counterexample, whose trail is printed.
// Exit 1 when a real configuration has an error or a mutant passes; exit 2 on bad usage.
//
//   npm run model                  every run
//   npm run model -- resend skew   only the runs whose name contains one of the words

import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const modelDir = join(dirname(fileURLToPath(import.meta.url)), "..", "model");

/** The documented bounds (README, "How we know it happens once"); a run may override them. */
const BOUNDS = ["-DL=2", "-DT=3", "-DFAULTS=2", "-DCRASHES=1"];

/**
 * `expect: "pass"` is the real protocol: spin must report 0 errors. `expect: "fail"` is a mutant: spin must find a
 * counterexample, and `finds` names the property it is expected to break (reported, not enforced: any error counts).
 */
const RUNS = [
  { name: "harness/unguarded", defines: ["-DHARNESS"], expect: "pass" },
  { name: "harness/keyed", defines: ["-DHARNESS", "-DKEYED"], expect: "pass" },
  { name: "middleware", defines: ["-DMIDDLEWARE"], expect: "pass" },
  // The Python harness (docs/claim-protocol.md, "The same steps in Python"): no late completion.
  { name: "python/harness/unguarded", defines: ["-DHARNESS", "-DPYTHON"], expect: "pass" },
  { name: "python/harness/keyed", defines: ["-DHARNESS", "-DKEYED", "-DPYTHON"], expect: "pass" },
  // Liveness (P7): the LTL formula `ends`, with weak fairness.
  // FAST: a caller sends its next command before the retention of the key it just claimed ends (model/net.pml).
  // One misbehaving command each, to stay within minutes on two loaded cores.
  {
    name: "liveness/harness",
    defines: ["-DHARNESS", "-DFAULTS=1", "-DFAST"],
    expect: "pass",
    liveness: true,
  },
  {
    name: "liveness/middleware",
    defines: ["-DMIDDLEWARE", "-DFAULTS=1", "-DFAST"],
    expect: "pass",
    liveness: true,
  },
  {
    name: "mutant/resend-claimed",
    defines: ["-DHARNESS", "-DMUTANT_RESEND"],
    expect: "fail",
    finds: "P1: a resent takeover answered 'claimed' runs the unguarded tool again",
  },
  {
    name: "mutant/save-once/harness",
    defines: ["-DHARNESS", "-DMUTANT_SAVE_ONCE"],
    expect: "fail",
    finds: "P6: one failed completion write leaves the key pending though the store answers again",
  },
  {
    name: "mutant/save-once/middleware",
    defines: ["-DMIDDLEWARE", "-DMUTANT_SAVE_ONCE"],
    expect: "fail",
    finds: "P6: one failed save leaves the response unrecorded",
  },
  {
    name: "mutant/skew/harness",
    defines: ["-DHARNESS", "-DMUTANT_SKEW"],
    expect: "fail",
    finds: "P4/P1: a caller whose clock runs ahead replaces a record before its retention ends",
  },
  {
    name: "mutant/skew/middleware",
    defines: ["-DMIDDLEWARE", "-DMUTANT_SKEW"],
    expect: "fail",
    finds: "P4/P2: a caller whose clock runs ahead replaces a saved response and runs the handler again",
  },
  {
    name: "mutant/renew-keeps-expiry",
    defines: ["-DHARNESS", "-DMUTANT_RENEW"],
    expect: "fail",
    finds: "P6 or P8: the pending record expires under a live lease, and the completion is lost with it",
  },
  {
    name: "mutant/middleware-reruns-takeover",
    defines: ["-DMIDDLEWARE", "-DMUTANT_MW_RERUN"],
    expect: "fail",
    finds: "P2: the handler runs again after a crash mid-handler",
  },
];

const words = process.argv.slice(2);
for (const word of words) {
  if (word.startsWith("-") || !RUNS.some((run) => run.name.includes(word))) {
    console.error(`model: no run is named like "${word}"; runs: ${RUNS.map((r) => r.name).join(", ")}`);
    process.exit(2);
  }
}
const selected = words.length ? RUNS.filter((r) => words.some((w) => r.name.includes(w))) : RUNS;

for (const tool of [
  ["spin", "-V"],
  ["gcc", "--version"],
]) {
  const probe = spawnSync(tool[0], tool.slice(1), { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    console.error(
      `model: ${tool[0]} is not installed; install Debian's package (apt-get install -y ${tool[0]}), as .ci/run does`,
    );
    process.exit(1);
  }
}

const results = [];
for (const run of selected) results.push(check(run));

console.log();
console.log("run                                   expected  got        states      depth   seconds");
for (const r of results) {
  console.log(
    `${r.name.padEnd(38)}${r.expect.padEnd(10)}${r.got.padEnd(11)}${String(r.states).padStart(9)}` +
      `${String(r.depth).padStart(11)}${r.seconds.toFixed(1).padStart(10)}${r.ok ? "" : "   <-- WRONG"}`,
  );
}
const wrong = results.filter((r) => !r.ok);
console.log();
if (wrong.length) {
  console.log(
    `model: ${wrong.length} of ${results.length} runs went wrong: ${wrong.map((r) => r.name).join(", ")}`,
  );
  process.exit(1);
}
console.log(
  `model: all ${results.length} runs as expected (real protocol: 0 errors; every mutant: a counterexample)`,
);

function check(run) {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-model-"));
  try {
    for (const file of readdirSync(modelDir)) {
      if (file.endsWith(".pml")) copyFileSync(join(modelDir, file), join(dir, file));
    }
    const named = (d) => d.split("=")[0];
    const defines = [
      ...BOUNDS.filter((b) => !run.defines.some((d) => named(d) === named(b))),
      ...run.defines,
    ];
    step(dir, "spin", ["-a", ...defines, "claim.pml"]);
    const cflags = run.liveness ? ["-DNFAIR=4"] : ["-DSAFETY", "-DNOCLAIM"];
    // -O0: on two loaded cores, -O2 spends minutes compiling the verifier to save seconds running it.
    step(dir, "gcc", ["-O0", "-w", "-DCOLLAPSE", ...cflags, "-o", "pan", "pan.c"]);
    const started = process.hrtime.bigint();
    // -m: the search depth limit (an exceeded one is a failure below); -w: 2^24 hash slots.
    const flags = ["-m2000000", "-w24", ...(run.liveness ? ["-a", "-f"] : [])];
    const pan = spawnSync("./pan", flags, { cwd: dir, encoding: "utf8", maxBuffer: 64 << 20 });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const out = `${pan.stdout}${pan.stderr}`;
    const errors = Number(out.match(/errors: (\d+)/)?.[1] ?? Number.NaN);
    const states = Number(out.match(/(\d+) states, stored/)?.[1] ?? Number.NaN);
    const depth = Number(out.match(/depth reached (\d+)/)?.[1] ?? Number.NaN);
    const tooShallow = /max search depth too small/.test(out);
    const violation = out.match(/^pan:1: (.*)$/m)?.[1];
    let got = Number.isNaN(errors) ? "no report" : errors === 0 ? "0 errors" : "error";
    if (tooShallow) got = "too deep";
    const ok = run.expect === "pass" ? got === "0 errors" : got === "error";
    console.log(
      `== ${run.name}: spin ${defines.join(" ")}${run.liveness ? " (LTL 'ends', weak fairness)" : ""}`,
    );
    console.log(`   ${states} states stored, depth ${depth}, ${seconds.toFixed(1)} s: ${got}`);
    if (violation) console.log(`   ${violation}`);
    if (run.expect === "fail" && run.finds) console.log(`   expected to break ${run.finds}`);
    if (Number.isNaN(errors)) console.log(out);
    if (got === "error") printTrail(dir, defines);
    return { name: run.name, expect: run.expect, got, states, depth, seconds, ok };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function step(dir, command, args) {
  const done = spawnSync(command, args, { cwd: dir, encoding: "utf8", maxBuffer: 64 << 20 });
  if (done.status !== 0) {
    console.error(`model: ${command} ${args.join(" ")} failed:\n${done.stdout}${done.stderr}`);
    process.exit(1);
  }
}

/** Replays the counterexample: the printf lines of the model (each store command, tick, crash, effect) and the end. */
function printTrail(dir, defines) {
  if (!existsSync(join(dir, "claim.pml.trail"))) {
    console.log("   (no trail was written)");
    return;
  }
  const replay = spawnSync("spin", ["-t", ...defines, "claim.pml"], {
    cwd: dir,
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  const lines = `${replay.stdout}${replay.stderr}`
    .split("\n")
    .map((line) => line.trim().replace(/\s+/g, " "))
    .filter((line) => line && !line.startsWith("ltl ") && !/^\d+:\s+proc/.test(line));
  const end = lines.findIndex((line) => line.startsWith("spin: trail ends"));
  console.log("   counterexample:");
  for (const line of lines.slice(0, end === -1 ? 80 : end + 1)) console.log(`     ${line}`);
}
