import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import canonicalizeOracle from "canonicalize";
import { describe, expect, it } from "vitest";
import { StorePrefix } from "../../src/store/scoped-key.js";
import { runCli as run } from "../support/cli.js";
import { freePort } from "../support/free-port.js";
import { postgresService } from "../support/services.js";
import { writeWhenRead } from "./late-writer.js";

/** The key as any RFC 8785 implementation derives it: here the independent `canonicalize` package. */
function oracleKey(value: unknown[]): string {
  return createHash("sha256")
    .update(canonicalizeOracle(value) as string, "utf8")
    .digest("hex");
}

const root = fileURLToPath(new URL("../../", import.meta.url));
const CLI = `"${process.execPath}" --import tsx src/cli/index.ts`;

/** Runs a shell pipeline from the repository's root (for stdin as a real pipe, a late writer, a directory). */
function shell(command: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", command], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("idemkey key and canon", () => {
  it("prints the key and nothing else, the same for reordered members and for stdin", async () => {
    const args = { repo: "acme/api", head: "fix-42", n: [1, 2.5, 1e21], "€": "😀" };
    const expected = oracleKey(["task-8812", "openPullRequest", args]);
    const [flag, reordered, piped] = await Promise.all([
      run(["key", "--task", "task-8812", "--tool", "openPullRequest", "--args", JSON.stringify(args)]),
      run([
        "key",
        "--task",
        "task-8812",
        "--tool",
        "openPullRequest",
        "--args",
        '{"€":"😀","n":[1,2.50,1E21],"head":"fix-42","repo":"acme/api"}',
      ]),
      run(["key", "--task", "task-8812", "--tool", "openPullRequest"], JSON.stringify(args)),
    ]);
    for (const result of [flag, reordered, piped]) {
      expect(result).toEqual({ code: 0, stdout: `${expected}\n`, stderr: "" });
    }
  });

  it("hashes [task, tool, args, step] with --step, a number when it reads as one", async () => {
    const [numeric, named] = await Promise.all([
      run(["key", "--task", "t", "--tool", "send", "--args", "{}", "--step", "2"]),
      run(["key", "--task", "t", "--tool", "send", "--args", "{}", "--step", "second"]),
    ]);
    expect(numeric.stdout).toBe(`${oracleKey(["t", "send", {}, 2])}\n`);
    expect(named.stdout).toBe(`${oracleKey(["t", "send", {}, "second"])}\n`);
  });

  it("prints the canonical form of an argument or of stdin", async () => {
    const input = '{"b":[333333333.33333329,1E30,4.50,2e-3],"a":"\\u20ac\\u000f","10":1,"2":2}';
    const expected = `${canonicalizeOracle(JSON.parse(input))}\n`;
    const [arg, piped] = await Promise.all([run(["canon", input]), run(["canon"], input)]);
    expect(arg).toEqual({ code: 0, stdout: expected, stderr: "" });
    expect(piped).toEqual({ code: 0, stdout: expected, stderr: "" });
  });

  it.each([
    [["key", "--tool", "x", "--args", "{}"], /missing --task/],
    [["key", "--task", "t", "--args", "{}"], /missing --tool/],
    [["key", "--task", "t", "--tool", "x", "--args", "{bad"], /--args is not valid JSON/],
    [["key", "--task", "t", "--tool", "x", "--args", "{}", "--frob"], /Unknown option '--frob'/],
    [
      ["key", "--task", "t", "--tool", "x", "--args", '{"n":[1e400]}'],
      /\$\.args\.n\[0\]: Infinity is not a JSON number/,
    ],
    [
      ["key", "--task", "t", "--tool", "x", "--args", '{"s":"\\ud800"}'],
      /\$\.args\.s: string contains a lone surrogate/,
    ],
    [["canon", "[1,"], /the input is not valid JSON/],
    [["canon", "1", "2"], /canon takes one JSON argument/],
    [["frobnicate"], /unknown command "frobnicate"/],
  ])("bad input %j: one line on stderr, exit code 2, nothing on stdout", async (args, message) => {
    const result = await run(args as string[]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^idemkey: [^\n]+\n$/);
    expect(result.stderr).toMatch(message);
  });

  it("reads stdin asynchronously: a pipe that is empty when the CLI reads it, direct or through cat, still gives the key", async () => {
    const expected = `${oracleKey(["t", "x", {}])}\n`;
    // The writer (cat, fed by this process) waits until the CLI is reading an empty pipe it made non-blocking, which
    // is where readFileSync(0) threw EAGAIN; see writeWhenRead for why `sleep 1` alone did not prove it.
    const [direct, viaCat, canon] = await Promise.all([
      writeWhenRead(`cat | ${CLI} key --task t --tool x`, "src/cli/index.ts", "{}\n", root),
      writeWhenRead(`cat | cat | ${CLI} key --task t --tool x`, "src/cli/index.ts", "{}\n", root),
      writeWhenRead(`cat | cat | ${CLI} canon`, "src/cli/index.ts", '{"b":1,"a":2}\n', root),
    ]);
    expect(direct).toEqual({ code: 0, stdout: expected, stderr: "", waited: "reading" });
    expect(viaCat).toEqual({ code: 0, stdout: expected, stderr: "", waited: "reading" });
    expect(canon).toEqual({ code: 0, stdout: '{"a":2,"b":1}\n', stderr: "", waited: "reading" });
    // The issue's own command, as a user types it.
    expect(await shell(`(sleep 1; echo '{}') | ${CLI} key --task t --tool x`)).toEqual({
      code: 0,
      stdout: expected,
      stderr: "",
    });
    // Four CLI starts through tsx, three of them at once: the default 30 s is one start's worth on a loaded machine.
  }, 120_000);

  it("reports a stdin that cannot be read as that, not as bad JSON", async () => {
    const result = await shell(`${CLI} key --task t --tool x < /`);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^idemkey: cannot read standard input: [^\n]*EISDIR[^\n]*\n$/);
    expect(result.stderr).not.toMatch(/not valid JSON/);
  });

  it("prints a short path for input nested too deep", async () => {
    const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`;
    const result = await run(["canon"], deep);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^idemkey: \$\[0\]\[0\][^\n]*levels deeper[^\n]*: nested deeper than/);
    expect(result.stderr.length).toBeLessThan(300);
  });

  it('hashes a JSON step with --step-json, so the string "2" can be a step', async () => {
    const [text, number, both] = await Promise.all([
      run(["key", "--task", "t", "--tool", "send", "--args", "{}", "--step-json", '"2"']),
      run(["key", "--task", "t", "--tool", "send", "--args", "{}", "--step-json", "2"]),
      run(["key", "--task", "t", "--tool", "send", "--args", "{}", "--step", "2", "--step-json", "2"]),
    ]);
    expect(text.stdout).toBe(`${oracleKey(["t", "send", {}, "2"])}\n`);
    expect(number.stdout).toBe(`${oracleKey(["t", "send", {}, 2])}\n`);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^idemkey: --step and --step-json[^\n]*\n$/);
  });

  it("prints the usage on stderr and exits 2 when given no arguments", async () => {
    const result = await run([]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("idemkey key --task <id> --tool <name>");
  });

  it("documents every command in --help and prints the package version", async () => {
    const [help, version] = await Promise.all([run(["--help"]), run(["--version"])]);
    expect(help.code).toBe(0);
    for (const command of ["idemkey key", "idemkey canon", "idemkey inspect", "--step", "--store"]) {
      expect(help.stdout).toContain(command);
    }
    const { version: expected } = (await import("../../package.json", { with: { type: "json" } })).default;
    expect(version.stdout).toBe(`${expected}\n`);
  });
});

describe("idemkey inspect: a store that cannot be opened", () => {
  it("a PostgreSQL database that does not exist: says so and what to do, not that a read may have been applied", async () => {
    const service = await postgresService();
    if (service.skip !== undefined) throw new Error(service.skip);
    const url = new URL(service.url);
    const missing = `idemkey_missing_${process.pid}_${Date.now()}`;
    url.pathname = `/${missing}`;
    const result = await run(["inspect", "--store", url.href, "--list"]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain(`database "${missing}" does not exist`);
    expect(result.stderr).toMatch(/create it|createdb/);
    expect(result.stderr).not.toMatch(/may or may not have been applied|calling again is safe/);
  });

  it("a Redis port nothing listens on: says it cannot connect, in sentences with one period each", async () => {
    const port = await freePort();
    const result = await run(["inspect", "--store", `redis://127.0.0.1:${port}`, "--list"]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).not.toContain("..");
    expect(result.stderr).toMatch(/cannot connect/);
    expect(result.stderr).not.toMatch(/may or may not have been applied|calling again is safe/);
  }, 60_000);
});

describe("idemkey CLI: store prefixes", () => {
  it("spells no store prefix as a literal: each is read from StorePrefix, the one place they are defined", () => {
    const dir = fileURLToPath(new URL("../../src/cli/", import.meta.url));
    const literal = new RegExp(
      `["'\`](${Object.values(StorePrefix)
        .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
        .join("|")})["'\`]`,
    );
    const found = readdirSync(dir)
      .filter((name) => name.endsWith(".ts"))
      .flatMap((name) =>
        readFileSync(join(dir, name), "utf8")
          .split("\n")
          .map((line, i) => ({ at: `src/cli/${name}:${i + 1}`, line }))
          .filter(({ line }) => literal.test(line)),
      );
    expect(found).toEqual([]);
  });
});
