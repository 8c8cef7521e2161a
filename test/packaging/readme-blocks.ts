import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { root, typecheck } from "./support.js";

/**
 * What a README block may use without declaring it: the things a reader already has. Each is declared before a
 * block that names it and does not import or declare it itself; nothing else is filled in.
 */
export const PLACEHOLDERS: Record<string, string> = {
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

export function tsBlocks(file: string): { line: number; code: string }[] {
  const text = readFileSync(join(root, file), "utf8");
  const blocks: { line: number; code: string }[] = [];
  for (const match of text.matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```/gm)) {
    blocks.push({ line: text.slice(0, match.index).split("\n").length + 1, code: match[1]! });
  }
  return blocks;
}

/** Every Markdown page of the documentation site, relative to the root: their blocks are compiled like the README's. */
export function docsPages(): string[] {
  const pages: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      // docs/api/ is TypeDoc's output (npm run docs), generated from the sources' TSDoc, not pages written by hand.
      if (entry.name.startsWith(".") || entry.name === "public" || `${dir}/${entry.name}` === "docs/api")
        continue;
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".md")) pages.push(path);
    }
  };
  walk("docs");
  return pages.sort();
}

export function prelude(code: string): string {
  const lines: string[] = [];
  for (const [name, type] of Object.entries(PLACEHOLDERS)) {
    const used = new RegExp(`(?<![.\\w$])${name}(?![\\w$])`).test(code);
    // Declared by the block itself: `const n`, `import { n }`, or destructured, `const { n } = ...`.
    const own = new RegExp(
      `(const|let|function|import[^;]*)\\W${name}\\W|(const|let)\\s*[{[][^=]*\\b${name}\\b`,
    ).test(code);
    if (used && !own) lines.push(`declare const ${name}: ${type};`);
  }
  return lines.join("\n");
}

/**
 * Writes every ```ts block of README.md, src/harness/README.md and docs/ into `app`/`folder`, each with the
 * placeholders it uses declared, type-checks them with `node` under `tsc --strict` (tsconfig.blocks.json, so that the
 * project's own tsconfig.json stays the user's), and returns the errors, each named by the README line it is on
 * (`README.md:25 +3`), and any other error of the compiler (none found to compile is one). `app` has idemkey and the
 * blocks' imports installed.
 */
export function readmeDiagnostics(app: string, node = process.execPath, folder = "blocks"): string[] {
  mkdirSync(join(app, folder));
  const origin = new Map<string, string>();
  let count = 0;
  for (const source of ["README.md", "src/harness/README.md", ...docsPages()]) {
    for (const block of tsBlocks(source)) {
      const file = `block-${++count}.ts`;
      origin.set(file, `${source}:${block.line}`);
      // The prelude goes last so that the block's own line numbers stay as they are in the README.
      writeFileSync(join(app, folder, file), `${block.code}\n${prelude(block.code)}\nexport {};\n`);
    }
  }
  expect(count).toBeGreaterThanOrEqual(12);
  writeFileSync(
    join(app, "tsconfig.blocks.json"),
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
      include: [folder],
    }),
  );
  const prefix = `${folder}/`;
  return typecheck(app, node, "tsconfig.blocks.json")
    .split("\n")
    .filter((l) => l.startsWith(prefix) || /^error TS/.test(l))
    .map((l) =>
      l
        .slice(prefix.length)
        .replace(/^(block-\d+\.ts)\((\d+)/, (_, f: string, n: string) => `${origin.get(f)} +${n}`),
    );
}
