import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "idemkey-inspector-imports-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = fileURLToPath(new URL("../../", import.meta.url));
const recorder = fileURLToPath(new URL("../integrations/fixtures/record-imports.mjs", import.meta.url));

/** Every module URL a fresh Node process resolves while running `code` (an ES module body). */
function resolvedWhile(code: string): string[] {
  const out = join(dir, `${Math.random().toString(36).slice(2)}.txt`);
  const child = spawnSync(
    process.execPath,
    ["--import", recorder, "--import", "tsx", "--input-type=module", "-e", code],
    { cwd: root, env: { ...process.env, IDEMKEY_IMPORTS_OUT: out }, encoding: "utf8" },
  );
  expect(child.stderr).toBe("");
  expect(child.status).toBe(0);
  return readFileSync(out, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as [string | null, string])[1].split("?")[0]!);
}

describe("what the inspector loads", () => {
  const entry = pathToFileURL(join(root, "src/inspector/index.ts")).href;

  it("idemkey/inspector loads no store client until a URL asks for one", () => {
    const urls = resolvedWhile(`await import(${JSON.stringify(entry)});`);
    expect(urls.some((u) => u.includes("/src/inspector/"))).toBe(true);
    expect(urls.filter((u) => /\/node_modules\/(pg|ioredis|better-sqlite3)\//.test(u))).toEqual([]);
  });

  it("(control) a postgres:// URL loads pg, and only pg", () => {
    const urls = resolvedWhile(
      `const { openStore } = await import(${JSON.stringify(entry)});
       const opened = await openStore("postgres://postgres@127.0.0.1:1/none");
       await opened.close();`,
    );
    expect(urls.some((u) => u.includes("/node_modules/pg/"))).toBe(true);
    expect(urls.filter((u) => /\/node_modules\/(ioredis|better-sqlite3)\//.test(u))).toEqual([]);
  });
});
