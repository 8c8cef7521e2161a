import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness, defineTool } from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { runCli, startCli } from "../support/cli.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-inspect-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A SQLite ledger with one completed call, written through the harness. */
async function ledger(): Promise<string> {
  const path = join(dir, "ledger.db");
  const store = sqliteStore(path);
  const tool = defineTool({ name: "ping", effect: "keyed", run: () => "pong" });
  await createHarness({ store }).call("task-1", tool, { n: 1 });
  await store.close();
  return path;
}

describe("idemkey inspect: bad input prints one line on stderr and exits 2", () => {
  const cases: [string, string[], RegExp][] = [
    ["no --store", ["inspect"], /missing --store/],
    ["an unknown flag", ["inspect", "--store", "sqlite:x.db", "--bogus"], /bogus/],
    ["a stray argument", ["inspect", "--store", "sqlite:x.db", "extra"], /unexpected argument "extra"/],
    ["an unknown URL kind", ["inspect", "--store", "mongodb://localhost/x"], /not a store URL/],
    ["a missing SQLite file", ["inspect", "--store", "sqlite:/nonexistent/dir/ledger.db"], /no SQLite file/],
    ["an empty SQLite path", ["inspect", "--store", "sqlite:"], /names no file/],
    [
      "an unknown URL parameter",
      ["inspect", "--store", "redis://127.0.0.1:6379?db=2"],
      /unknown parameter \?db=/,
    ],
    ["a port that is not a number", ["inspect", "--store", "sqlite:x.db", "--port", "http"], /--port/],
    ["a port out of range", ["inspect", "--store", "sqlite:x.db", "--port", "70000"], /--port/],
    [
      "a remote host without --allow-remote",
      ["inspect", "--store", "sqlite:x.db", "--host", "0.0.0.0"],
      /--allow-remote/,
    ],
    ["--list with a serving flag", ["inspect", "--store", "sqlite:x.db", "--list", "--port", "1"], /--list/],
    ["a short token", ["inspect", "--store", "sqlite:x.db", "--token", "abc"], /at least 16/],
    ["an empty field in --redact", ["inspect", "--store", "sqlite:x.db", "--redact", "a,,b"], /--redact/],
    ["an empty --user", ["inspect", "--store", "sqlite:x.db", "--user", " "], /--user/],
    ["a --max-records of 0", ["inspect", "--store", "sqlite:x.db", "--max-records", "0"], /--max-records/],
    [
      "a --max-records not a number",
      ["inspect", "--store", "sqlite:x.db", "--max-records", "1e3"],
      /--max-records/,
    ],
  ];
  it.each(cases)("%s", async (_, args, message) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^idemkey: [^\n]+\n$/);
    expect(stderr).toMatch(message);
  });

  it("masks a password in the URL it repeats", async () => {
    const { code, stderr } = await runCli([
      "inspect",
      "--store",
      "postgres://u:hunter2@127.0.0.1:5432/x?bad=1&table=",
    ]);
    expect(code).toBe(2);
    expect(stderr).not.toContain("hunter2");
    expect(stderr).toContain("u:***@");
  });

  it("says in one line, with exit 1, that the store does not answer", async () => {
    const { code, stderr } = await runCli(["inspect", "--store", "postgres://postgres@127.0.0.1:1/test"]);
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^idemkey: cannot read the ledger at postgres:\/\/postgres@127\.0\.0\.1:1\/test: [^\n]*\n$/,
    );
  });

  it("documents inspect, its flags and the default redaction in --help", async () => {
    const { code, stdout } = await runCli(["inspect", "--help"]);
    expect(code).toBe(0);
    for (const flag of [
      "--store",
      "--port",
      "--read-only",
      "--user",
      "--redact",
      "--token",
      "--host",
      "--allow-remote",
      "--max-records",
      "--secret",
    ]) {
      expect(stdout).toContain(flag);
    }
    expect(stdout).toContain(
      "token,password,secret,apiKey,authorization,cookie,cardNumber,card_number,cvc,cvv",
    );
  });
});

describe("idemkey inspect: serving", () => {
  it("prints the URL with the token, serves the ledger on loopback, and stops on SIGINT with exit 0", async () => {
    const path = await ledger();
    const child = startCli(["inspect", "--store", `sqlite:${path}`, "--user", "ana"]);
    let stdout = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on("data", (d) => {
        stdout += d;
        const m = /open (http:\/\/127\.0\.0\.1:\d+\/)#token=(\S+)/.exec(stdout);
        if (m) resolve(m[1]!);
      });
      child.on("close", (code) => reject(new Error(`exited ${code}: ${stdout}`)));
    });
    const token = /#token=(\S+)/.exec(stdout)![1]!;
    expect(stdout).toContain(`token: ${decodeURIComponent(token)}`);
    const counts = (await (await fetch(`${url}api/counts`)).json()) as { counts: { completed: number } };
    expect(counts.counts.completed).toBe(1);
    const config = (await (await fetch(`${url}api/config`)).json()) as { user: string; label: string };
    expect(config).toMatchObject({ user: "ana", label: `sqlite:${path}` });
    const exit = new Promise<number | null>((resolve) => child.on("close", resolve));
    child.kill("SIGINT");
    expect(await exit).toBe(0);
  });
});
