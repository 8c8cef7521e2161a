import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { root } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-release-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A git checkout holding the release script, package.json and CHANGELOG.md, committed: a clean tree. */
function checkout(name: string, changelog: string): string {
  const at = join(dir, name);
  mkdirSync(join(at, "scripts"), { recursive: true });
  cpSync(join(root, "scripts/release.mjs"), join(at, "scripts/release.mjs"));
  writeFileSync(join(at, "package.json"), JSON.stringify({ name: "idemkey", version: "9.9.9" }));
  writeFileSync(join(at, "CHANGELOG.md"), changelog);
  const git = (...args: string[]) => execFileSync("git", args, { cwd: at, stdio: "pipe" });
  git("init", "-q");
  git("add", ".");
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "clean");
  return at;
}

describe("npm run release", () => {
  it("refuses a dirty tree with one line and exit 2, before it runs any check", () => {
    const at = checkout("dirty", "# Changelog\n\n## 9.9.9\n");
    writeFileSync(join(at, "stray.txt"), "not committed");
    const run = spawnSync(process.execPath, ["scripts/release.mjs"], { cwd: at, encoding: "utf8" });
    expect({ status: run.status, stderr: run.stderr, stdout: run.stdout }).toEqual({
      status: 2,
      stderr: "npm run release: the tree is dirty (1 file(s) changed or untracked): commit or stash first\n",
      stdout: "",
    });
  });

  it("refuses a version the CHANGELOG does not describe", () => {
    const at = checkout("unreleased", "# Changelog\n\n## 9.9.8\n");
    const run = spawnSync(process.execPath, ["scripts/release.mjs"], { cwd: at, encoding: "utf8" });
    expect({ status: run.status, stderr: run.stderr }).toEqual({
      status: 1,
      stderr: 'npm run release: CHANGELOG.md has no section "## 9.9.9" for package.json\'s version\n',
    });
  });
});
