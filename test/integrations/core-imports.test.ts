import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "idemkey-imports-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = fileURLToPath(new URL("../../", import.meta.url));
const recorder = fileURLToPath(new URL("./fixtures/record-imports.mjs", import.meta.url));

/**
 * Every module a fresh Node process loads because of `entry` (a file under src/): the URLs resolved from it and,
 * transitively, from what it imports; tsx's own modules, loaded through the same hooks, are not reached from it.
 */
function resolvedBy(entry: string): string[] {
  const out = join(dir, `${entry.replaceAll("/", "_")}.txt`);
  const url = pathToFileURL(join(root, entry)).href;
  const child = spawnSync(
    process.execPath,
    [
      "--import",
      recorder,
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `await import(${JSON.stringify(url)});`,
    ],
    { cwd: root, env: { ...process.env, IDEMKEY_IMPORTS_OUT: out }, encoding: "utf8" },
  );
  expect(child.stderr).toBe("");
  expect(child.status).toBe(0);
  const edges = readFileSync(out, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as [string | null, string]).map((u) => u?.split("?")[0]));
  const reached = new Set([url]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [parent, child] of edges) {
      if (parent && child && reached.has(parent) && !reached.has(child)) {
        reached.add(child);
        grew = true;
      }
    }
  }
  reached.delete(url);
  return [...reached];
}

describe("what the core and the adapters load", () => {
  it("import('idemkey') loads only node: modules and its own files, none of the agent frameworks", () => {
    const urls = resolvedBy("src/index.ts");
    const src = pathToFileURL(join(root, "src")).href;
    expect(urls.filter((u) => !u.startsWith("node:") && !u.startsWith(src))).toEqual([]);
    expect(urls.some((u) => u.startsWith(`${src}/harness/`))).toBe(true);
  });

  it("import('idemkey') loads none of the durable engines' SDKs; each engine's subpath loads its own", () => {
    expect(resolvedBy("src/index.ts").filter((u) => u.includes("/node_modules/"))).toEqual([]);
    const sdks = {
      "src/dbos/index.ts": "/node_modules/@dbos-inc/dbos-sdk/",
      "src/restate/index.ts": "/node_modules/@restatedev/restate-sdk/",
      "src/temporal/index.ts": "/node_modules/@temporalio/activity/",
      "src/inngest/index.ts": "/node_modules/inngest/",
      "src/workflow/index.ts": "/node_modules/workflow/",
    };
    for (const [entry, sdk] of Object.entries(sdks)) {
      expect(
        resolvedBy(entry).some((u) => u.includes(sdk)),
        entry,
      ).toBe(true);
    }
  }, 120_000);

  it("(control) the recorder sees a framework when an adapter does load one", () => {
    const urls = resolvedBy("src/openai-agents/index.ts");
    expect(urls.some((u) => u.includes("/node_modules/@openai/agents/"))).toBe(true);
    const langgraph = resolvedBy("src/langgraph/index.ts");
    expect(langgraph.some((u) => u.includes("/node_modules/@langchain/langgraph/"))).toBe(true);
  });

  it("idemkey/otel loads the OpenTelemetry API and no SDK: spans cost nothing until the application registers one", () => {
    const packages = new Set(
      resolvedBy("src/otel/index.ts").flatMap((u) => {
        const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u);
        return m ? [m[1]] : [];
      }),
    );
    expect([...packages]).toEqual(["@opentelemetry/api"]);
  });

  it("idemkey/mcp and idemkey/claude-agent-sdk load no framework code of their own: they use only its types", () => {
    for (const entry of ["src/mcp/index.ts", "src/claude-agent-sdk/index.ts"]) {
      expect(resolvedBy(entry).filter((u) => u.includes("/node_modules/"))).toEqual([]);
    }
  });

  it("idemkey/ai loads its peer, the application's own `ai`, and nothing else first", () => {
    // `asSchema` and `jsonSchema` wrap a tool's schema of any kind (zod 3 or 4, Standard Schema, JSON Schema) so that
    // the key comes from what the model sent, before the schema fills defaults in (docs/integration-contract.md).
    const loaded = resolvedBy("src/ai/index.ts").filter((u) => u.includes("/node_modules/"));
    expect(loaded[0]).toMatch(/\/node_modules\/ai\/dist\//);
  });
});
