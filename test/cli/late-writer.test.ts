import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { childRunning } from "./late-writer.js";

/** The children of `parent`, by pid, as /proc lists them now. */
function childrenOf(parent: number): number[] {
  try {
    return readFileSync(`/proc/${parent}/task/${parent}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

describe("writeWhenRead's search for the process it waits on", () => {
  // CI on Node 22 once timed out in the stdin test: the search took a forked shell (a pipeline stage between fork and
  // exec still has the shell's command line, which names the CLI's script) for the CLI, then waited for that stage,
  // which became `cat`, to read through epoll, which cat never does. A background subshell stays in that state, so
  // the case is held still here instead of caught in a window of microseconds.
  it("does not take a forked shell whose script merely mentions the marker for the process running it", async () => {
    const sh = spawn("sh", ["-c", "while :; do sleep 1; done & wait # src/cli/index.ts"], {
      stdio: "ignore",
    });
    try {
      while (childrenOf(sh.pid!).length === 0) await sleep(10);
      const [subshell] = childrenOf(sh.pid!);
      expect(readFileSync(`/proc/${subshell}/cmdline`, "utf8")).toContain("src/cli/index.ts");
      expect(childRunning(sh.pid!, "src/cli/index.ts")).toBeUndefined();
    } finally {
      for (const child of childrenOf(sh.pid!)) process.kill(child, "SIGKILL");
      sh.kill("SIGKILL");
    }
  });

  it("finds a process that has the marker as one of its arguments", async () => {
    const sh = spawn(
      "sh",
      ["-c", `"${process.execPath}" -e "setTimeout(() => {}, 60000)" src/cli/index.ts & wait`],
      {
        stdio: "ignore",
      },
    );
    try {
      let pid: number | undefined;
      while (pid === undefined) {
        pid = childRunning(sh.pid!, "src/cli/index.ts");
        if (pid === undefined) await sleep(10);
      }
      expect(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")).toContain("src/cli/index.ts");
    } finally {
      for (const child of childrenOf(sh.pid!)) process.kill(child, "SIGKILL");
      sh.kill("SIGKILL");
    }
  });
});
