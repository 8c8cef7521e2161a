import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const cli = join(root, "src/cli/index.ts");

/** Starts the `idemkey` CLI from source, as `npx idemkey` would run it once built. */
export function startCli(args: string[], stdin = false): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", cli, ...args], {
    cwd: root,
    stdio: [stdin ? "pipe" : "ignore", "pipe", "pipe"],
  });
}

/** Runs the CLI to the end, feeding `stdin` when given, and collects what it printed. */
export function runCli(
  args: string[],
  stdin?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = startCli(args, stdin !== undefined);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d) => (stdout += d));
    child.stderr!.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    if (stdin !== undefined) child.stdin!.end(stdin);
  });
}
