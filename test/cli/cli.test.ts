import { createHash } from "node:crypto";
import canonicalizeOracle from "canonicalize";
import { describe, expect, it } from "vitest";
import { runCli as run } from "../support/cli.js";

/** The key as any RFC 8785 implementation derives it: here the independent `canonicalize` package. */
function oracleKey(value: unknown[]): string {
  return createHash("sha256")
    .update(canonicalizeOracle(value) as string, "utf8")
    .digest("hex");
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
