import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness, defineTool, OutcomeUnknownError } from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { runCli, startCli } from "../support/cli.js";

const TOOLS = fileURLToPath(new URL("./fixtures/tools.ts", import.meta.url));
const NO_TOOLS = fileURLToPath(new URL("./fixtures/no-tools.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "idemkey-reconcile-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A ledger file holding `count` unknown outcomes of the fixture's tool; their keys. */
async function ledger(name: string, count: number): Promise<{ path: string; keys: string[] }> {
  const path = join(dir, `${name}.db`);
  const store = sqliteStore(path);
  const lost = defineTool<{ n: number }, unknown>({
    name: "transfer",
    effect: "unguarded",
    run: () => {
      throw new Error("socket hang up");
    },
  });
  const harness = createHarness({ store, retry: { retries: 0 } });
  const keys: string[] = [];
  for (let n = 0; n < count; n++) {
    await expect(harness.call("task", lost, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
    keys.push(harness.key("task", lost, { n }));
  }
  await store.close();
  return { path, keys };
}

async function states(path: string, keys: string[]) {
  const store = sqliteStore(path);
  const harness = createHarness({ store });
  const entries = await Promise.all(keys.map((k) => harness.get(k)));
  await store.close();
  return entries.map((e) => e?.state);
}

describe("idemkey reconcile", () => {
  it("--once decides every unknown outcome, one JSON line each, and prints what it did", async () => {
    const { path, keys } = await ledger("once", 3);
    const run = await runCli([
      "reconcile",
      "--store",
      `sqlite:${path}`,
      "--tools",
      TOOLS,
      "--once",
      "--id",
      "cli-1",
    ]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const lines = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines.filter((l) => l.type === "reconciled")).toHaveLength(3);
    expect(lines.at(-1)).toMatchObject({ reconciler: "cli-1", examined: 3, done: 3, undecided: 0 });
    expect(await states(path, keys)).toEqual(["completed", "completed", "completed"]);
  }, 30_000);

  it("sweeps until SIGTERM, then stops cleanly with exit 0", async () => {
    const { path, keys } = await ledger("loop", 2);
    const child = startCli([
      "reconcile",
      "--store",
      `sqlite:${path}`,
      "--tools",
      TOOLS,
      "--interval-ms",
      "60000",
    ]);
    let stdout = "";
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    await new Promise<void>((resolve) => {
      child.stdout!.on("data", (d) => {
        stdout += d;
        if (stdout.split("\n").filter((l) => l.includes('"reconciled"')).length === 2) resolve();
      });
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/^idemkey reconcile: reconciler:\S+ on .*Ctrl-C stops it\n$/);
    expect(await states(path, keys)).toEqual(["completed", "completed"]);
  }, 30_000);

  it.each([
    [["reconcile", "--tools", TOOLS], /^idemkey: missing --store <url>/],
    [["reconcile", "--store", "memory:"], /^idemkey: missing --tools <module>/],
    [
      ["reconcile", "--store", "memory:", "--tools", join(dir, "nowhere.js")],
      /^idemkey: --tools .*cannot import it/,
    ],
    [["reconcile", "--store", "memory:", "--tools", NO_TOOLS], /^idemkey: --tools .* exports no tool/],
    [
      ["reconcile", "--store", "memory:", "--tools", TOOLS, "--concurrency", "0"],
      /^idemkey: --concurrency must be/,
    ],
    [["reconcile", "--store", "nosuch://x", "--tools", TOOLS], /^idemkey: /],
    [["reconcile", "--store", "memory:", "--tools", TOOLS, "--bogus"], /^idemkey: Unknown option/],
  ])(
    "bad input %j: one line on stderr, exit 2",
    async (args, message) => {
      const run = await runCli(args as string[]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
    },
    30_000,
  );
});
