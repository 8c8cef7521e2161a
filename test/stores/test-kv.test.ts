import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness, defineTool } from "../../src/index.js";
import { runCli, startCli } from "../support/cli.js";
import { testStore } from "./contract.js";
import { testKvStore } from "./fixtures/test-kv.js";

/*
 * The done-when of "adding a store is one folder": a store defined in the tests only, with a driver described the
 * way src/'s store folders describe theirs, runs the contract suite and opens from a URL in the CLI, with nothing
 * in src/inspector/ or src/store/guard.ts knowing it.
 */

const dir = mkdtempSync(join(tmpdir(), "idemkey-test-kv-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const driver = "test/stores/fixtures/test-kv-driver.ts";

testStore("test-kv (file)", (clock) => testKvStore(join(dir, "contract.json"), { clock }));
// A store without list and purge runs the claim part alone, by declaring what it cannot do.
testStore(
  "test-kv without listing",
  (clock) => testKvStore(join(dir, "claims.json"), { clock, listing: false }),
  {
    list: false,
    purge: false,
  },
);

describe("idemkey inspect --driver", () => {
  it("opens a test-kv: URL with the driver a module exports, and serves the ledger a harness wrote", async () => {
    const path = join(dir, "ledger.json");
    const tool = defineTool({
      name: "ping",
      effect: "keyed",
      run: (args: { n: number }) => ({ pong: args.n }),
    });
    const harness = createHarness({ store: testKvStore(path) });
    await harness.call("task-kv", tool, { n: 1 });
    await harness.call("task-kv", tool, { n: 2 });

    const child = startCli(["inspect", "--driver", driver, "--store", `test-kv:${path}`]);
    let stdout = "";
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const exit = new Promise<number | null>((resolve) => child.on("close", resolve));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on("data", (d) => {
        stdout += d;
        const m = /open (http:\/\/127\.0\.0\.1:\d+\/)#token=/.exec(stdout);
        if (m) resolve(m[1]!);
      });
      child.on("close", (code) => reject(new Error(`exited ${code}: ${stdout}${stderr}`)));
    });
    try {
      expect(stdout).toContain(`idemkey inspector for test-kv:${path}`);
      const counts = (await (await fetch(`${url}api/counts`)).json()) as { counts: { completed: number } };
      expect(counts.counts.completed).toBe(2);
      const key = harness.key("task-kv", tool, { n: 2 });
      const detail = (await (await fetch(`${url}api/calls/${key}`)).json()) as { result: unknown };
      expect(detail.result).toEqual({ pong: 2 });
    } finally {
      child.kill("SIGINT");
    }
    expect(await exit).toBe(0);
  });

  it("lists the driver in --help, and reads its URLs with the messages of the built-in ones", async () => {
    const help = await runCli(["inspect", "--driver", driver, "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/test-kv:<path> +the test KV file\n/);
    const missing = await runCli([
      "inspect",
      "--driver",
      driver,
      "--store",
      `test-kv:${join(dir, "none.json")}`,
    ]);
    expect(missing).toMatchObject({ code: 2, stdout: "" });
    expect(missing.stderr).toBe(
      `idemkey: --store test-kv:${join(dir, "none.json")}: no test KV file at ${join(dir, "none.json")}\n`,
    );
    const param = await runCli(["inspect", "--driver", driver, "--store", "test-kv:./x.json?table=t"]);
    expect(param.stderr).toBe(
      "idemkey: --store test-kv:./x.json?table=t: unknown parameter ?table= (only none)\n",
    );
  });

  it("without --driver, a test-kv: URL is not a store URL", async () => {
    const { code, stderr } = await runCli(["inspect", "--store", "test-kv:./x.json"]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^idemkey: --store test-kv:\.\/x\.json is not a store URL; use sqlite:<path>, /);
  });

  it("says in one line, with exit 2, that a --driver module cannot be imported or exports no driver", async () => {
    const absent = await runCli(["inspect", "--driver", "./no/such/driver.js", "--store", "memory:"]);
    expect(absent.code).toBe(2);
    expect(absent.stderr).toMatch(/^idemkey: --driver \.\/no\/such\/driver\.js: cannot import it: [^\n]+\n$/);
    const notDriver = await runCli([
      "inspect",
      "--driver",
      "test/stores/fixtures/test-kv.ts",
      "--store",
      "memory:",
    ]);
    expect(notDriver.code).toBe(2);
    expect(notDriver.stderr).toMatch(
      /^idemkey: --driver test\/stores\/fixtures\/test-kv\.ts exports no store driver/,
    );
  });
});
