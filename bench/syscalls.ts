import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { printTable } from "./table.js";

const CALLS = 2_000;
const child = fileURLToPath(new URL("./syscalls-child.ts", import.meta.url));

/** Syscalls of one child process under `strace -c -f`, by name, and their total. */
function traced(mode: string, count: number): Map<string, number> {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-strace-"));
  try {
    const out = join(dir, "strace.txt");
    const run = spawnSync(
      "strace",
      ["-c", "-f", "-o", out, process.execPath, "--import", "tsx", child, mode, `${count}`],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    if (run.status !== 0) throw new Error(`strace ${mode}: ${run.stderr.toString().trim() || run.error}`);
    const counts = new Map<string, number>();
    for (const line of readFileSync(out, "utf8").split("\n")) {
      // % time, seconds, usecs/call, calls, [errors], syscall
      const fields = line.trim().split(/\s+/);
      if (fields.length < 5 || !/^\d/.test(fields[0]!) || fields.at(-1) === "total") continue;
      counts.set(fields.at(-1)!, Number(fields[3]));
    }
    return counts;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Per call: the difference between CALLS calls and none, so that start-up and loading do not count. */
function perCall(mode: string): Map<string, number> {
  const idle = traced(mode, 0);
  const busy = traced(mode, CALLS);
  const out = new Map<string, number>();
  for (const [name, calls] of busy) out.set(name, (calls - (idle.get(name) ?? 0)) / CALLS);
  return out;
}

/** The contenders, in the child's modes, and what each is. */
const FRESH: [string, string][] = [
  ["harness", "harness"],
  ["harness-own", "harness, file it opens"],
  ["floor", "floor: INSERT + UPDATE"],
  ["floor-keys", "+ harness keys and rows"],
  ["floor-index", "+ expiry index"],
];
const REPLAY: [string, string][] = [
  ["harness-replay", "harness"],
  ["floor-replay", "floor: one SELECT"],
];

const ALWAYS = new Set(["fsync", "fdatasync"]);

export async function benchSyscalls(): Promise<void> {
  if (spawnSync("strace", ["-V"]).status !== 0) {
    console.log("bench: syscalls rows skipped: strace is not installed (apt-get install -y strace)");
    return;
  }
  for (const [what, contenders] of [
    ["fresh keyed call", FRESH],
    ["replay of a completed call", REPLAY],
  ] as const) {
    const counts = contenders.map(([mode]) => perCall(mode));
    const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    // fsync is rare (a checkpoint's two) but each one waits for the disk: always shown.
    const names = [...new Set(counts.flatMap((m) => [...m.keys()]))]
      .filter((n) => ALWAYS.has(n) || counts.some((m) => (m.get(n) ?? 0) >= 0.05))
      .sort((a, b) => (counts[0]!.get(b) ?? 0) - (counts[0]!.get(a) ?? 0));
    printTable(
      `syscalls per ${what} on a SQLite file (strace -c -f, ${CALLS} calls minus none)`,
      ["syscall", ...contenders.map(([, label]) => label)],
      [
        ...names.map((n) => [n, ...counts.map((m) => (m.get(n) ?? 0).toFixed(ALWAYS.has(n) ? 3 : 1))]),
        ["total", ...counts.map((m) => total(m).toFixed(1))],
      ],
    );
  }
}
