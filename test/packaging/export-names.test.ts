import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

/** Every subpath's source entry: "." is src/index.ts, "./sqlite" src/sqlite/index.ts. */
const entries = Object.keys(pkg.exports)
  .filter((subpath) => subpath !== "./package.json")
  .map((subpath) => ({
    subpath,
    file: join(root, "src", subpath === "." ? "index.ts" : `${subpath.slice(2)}/index.ts`),
  }));

const sources = readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" })
  .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
  .map((f) => join(root, "src", f));

// Values may share a name: each adapter's one function has the same name on its subpath (`idempotency` from
// idemkey/hono and idemkey/express), and a user imports one. A type's name is read in docs and errors without its
// subpath, so two different types with one name are one name for two ideas.
it("no two exported types share one name across the package's entry points, unless one is deprecated", () => {
  // Only idemkey's own files, no lib and no framework types: the names and their declarations are all this needs.
  const program = ts.createProgram(sources, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
    noResolve: true,
    noLib: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const seen = new Map<string, Map<string, { subpaths: string[]; deprecated: boolean }>>();
  for (const { subpath, file } of entries) {
    const source = program.getSourceFile(file);
    expect(source, file).toBeDefined();
    const moduleSymbol = checker.getSymbolAtLocation(source!)!;
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const declaration = target.declarations?.[0];
      if (!declaration || target.flags & ts.SymbolFlags.Value) continue;
      const where = `${declaration.getSourceFile().fileName.slice(root.length)}:${declaration.pos}`;
      const deprecated = ts.getJSDocTags(declaration).some((tag) => tag.tagName.text === "deprecated");
      const byDeclaration = seen.get(exported.name) ?? new Map();
      const entry = byDeclaration.get(where) ?? { subpaths: [], deprecated };
      entry.subpaths.push(subpath);
      byDeclaration.set(where, entry);
      seen.set(exported.name, byDeclaration);
    }
  }
  const clashes = [...seen]
    .filter(([, declarations]) => [...declarations.values()].filter((d) => !d.deprecated).length > 1)
    .map(
      ([name, declarations]) =>
        `${name}: ${[...declarations.values()].map((d) => d.subpaths.join(",")).join(" vs ")}`,
    );
  expect(clashes).toEqual([]);
  expect(seen.has("HarnessOptions") && seen.has("IdempotencyOptions") && seen.size > 100).toBe(true);
});
