import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packPackage, project, root, typecheck } from "./support.js";

// The package as a user gets it: built, packed, and installed into a project outside the checkout. Building and
// type-checking take tens of seconds on a loaded machine: the budget is for that work, not a claim about speed.
const WORK_MS = 600_000;

const dir = mkdtempSync(join(tmpdir(), "idemkey-package-"));
let tarball = "";
beforeAll(() => {
  tarball = packPackage(dir);
}, WORK_MS);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tarballFiles(): string[] {
  const listed = spawnSync("tar", ["-tzf", tarball], { encoding: "utf8" });
  return listed.stdout.split("\n").filter(Boolean);
}

describe("the packed package", () => {
  it("ships source maps only with the sources in them (sourcesContent), since src/ is not in the tarball", () => {
    const files = tarballFiles();
    expect(files.some((f) => f.startsWith("package/src/"))).toBe(false);
    const maps = files.filter((f) => f.endsWith(".js.map"));
    expect(maps.length).toBeGreaterThan(10);
    const unpacked = project(join(dir, "maps"), tarball, "none");
    for (const map of maps) {
      const json = JSON.parse(
        readFileSync(join(unpacked, "node_modules/idemkey", map.slice("package/".length)), "utf8"),
      ) as { sources: string[]; sourcesContent?: (string | null)[] };
      expect(json.sourcesContent, map).toHaveLength(json.sources.length);
      expect(
        json.sourcesContent!.every((s) => typeof s === "string" && s.length > 0),
        map,
      ).toBe(true);
    }
  });

  it("says which package and range to install when a subpath's optional peer is missing", () => {
    const bare = project(join(dir, "bare"), tarball, "none");
    const load = (specifier: string) =>
      spawnSync(
        process.execPath,
        ["--input-type=module", "-e", `await import(${JSON.stringify(specifier)});`],
        {
          cwd: bare,
          encoding: "utf8",
        },
      );
    // The core needs nothing.
    expect(load("idemkey")).toMatchObject({ status: 0, stderr: "" });
    const sqlite = load("idemkey/sqlite");
    expect(sqlite.status).not.toBe(0);
    expect(sqlite.stderr).toContain(
      "MissingPeerError: idemkey/sqlite needs better-sqlite3 ^12 || ^13: npm install better-sqlite3",
    );
    const agents = load("idemkey/openai-agents");
    expect(agents.stderr).toContain(
      "idemkey/openai-agents needs @openai/agents ^0.20: npm install @openai/agents",
    );
  });

  it("names in those messages the ranges package.json declares", () => {
    const { peerDependencies } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      peerDependencies: Record<string, string>;
    };
    expect(peerDependencies["better-sqlite3"]).toBe("^12.0.0 || ^13.0.0");
    expect(peerDependencies["@openai/agents"]).toBe("^0.20.0");
  });
});

/**
 * What a README block may use without declaring it: the things a reader already has. Each is declared before a
 * block that names it and does not import or declare it itself; nothing else is filled in.
 */
const PLACEHOLDERS: Record<string, string> = {
  harness: 'import("idemkey").Harness',
  client: 'import("@modelcontextprotocol/client").Client',
  chatId: "string",
  messageId: "string",
  userMessageId: "string",
  turnId: "string",
  sessionId: "string",
  prompt: "string",
  model: 'import("ai").LanguageModel',
  messages: 'import("ai").ModelMessage[]',
  sendEmail: 'import("ai").Tool<{ to: string; subject: string }, { messageId: string }>',
  searchDocs: 'import("ai").Tool<{ query: string }, string[]>',
  agent: 'import("@openai/agents").Agent<{ ticketId: string }>',
  payments: "{ refund(...args: unknown[]): Promise<string>; charge(...args: unknown[]): Promise<string> }",
  tracker: "{ open(repo: string, title: string): Promise<string> }",
  accountOf: "(authorization: string | undefined) => Promise<string>",
  db: 'import("better-sqlite3").Database',
  pool: 'import("pg").Pool',
  key: "string",
  fingerprint: "string",
  customer: "string",
  cents: "number",
  c: "string",
  n: "number",
};

function tsBlocks(file: string): { line: number; code: string }[] {
  const text = readFileSync(join(root, file), "utf8");
  const blocks: { line: number; code: string }[] = [];
  for (const match of text.matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```/gm)) {
    blocks.push({ line: text.slice(0, match.index).split("\n").length + 1, code: match[1]! });
  }
  return blocks;
}

function prelude(code: string): string {
  const lines: string[] = [];
  for (const [name, type] of Object.entries(PLACEHOLDERS)) {
    const used = new RegExp(`(?<![.\\w$])${name}(?![\\w$])`).test(code);
    const own = new RegExp(`(const|let|function|import[^;]*)\\W${name}\\W`).test(code);
    if (used && !own) lines.push(`declare const ${name}: ${type};`);
  }
  return lines.join("\n");
}

describe("the README's TypeScript blocks", () => {
  const sources = ["README.md", "src/harness/README.md"];

  it(
    "compile under tsc --strict against the packed package, with only the declared placeholders filled in",
    () => {
      const app = project(join(dir, "readme"), tarball, "all");
      mkdirSync(join(app, "blocks"));
      const origin = new Map<string, string>();
      let count = 0;
      for (const source of sources) {
        for (const block of tsBlocks(source)) {
          const file = `block-${++count}.ts`;
          origin.set(file, `${source}:${block.line}`);
          // The prelude goes last so that the block's own line numbers stay as they are in the README.
          writeFileSync(join(app, "blocks", file), `${block.code}\n${prelude(block.code)}\nexport {};\n`);
        }
      }
      expect(count).toBeGreaterThanOrEqual(12);
      writeFileSync(
        join(app, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noEmit: true,
            target: "ES2023",
            lib: ["ES2024"],
            module: "NodeNext",
            moduleResolution: "NodeNext",
            types: ["node"],
            skipLibCheck: true,
          },
          include: ["blocks"],
        }),
      );
      const diagnostics = typecheck(app)
        .split("\n")
        .filter((l) => /^blocks\//.test(l))
        .map((l) =>
          l.replace(/^blocks\/(block-\d+\.ts)\((\d+)/, (_, f: string, n: string) => `${origin.get(f)} +${n}`),
        );
      expect(diagnostics).toEqual([]);
    },
    WORK_MS,
  );
});
