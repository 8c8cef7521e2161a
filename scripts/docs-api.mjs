// After TypeDoc wrote the API reference as Markdown into docs/api/ (npm run docs, scripts/docs.mjs): every "Defined in"
// link is rebuilt from the repository path TypeDoc shows (src/..., relative to the checkout), so it resolves on
// GitHub; one into a dependency's types (node_modules) is dropped, since that file is not the repository's; and the
// modules are named by their import specifiers (idemkey/sqlite), not by their folders (src/sqlite).
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const BLOB = "https://github.com/idemkey/idemkey/blob/main/";

/** The import specifier for a module TypeDoc named by its folder: src → idemkey, src/sqlite → idemkey/sqlite. */
const specifier = (name) => name.replace(/^src(?=\/|$)/, "idemkey");

export function fixApiPages(root) {
  const api = join(root, "docs/api");
  const problems = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (entry.endsWith(".md")) fixPage(path);
    }
  };
  const fixPage = (path) => {
    const text = readFileSync(path, "utf8")
      .split("\n")
      .filter((line) => !/^Defined in: \[[^\]]*node\\?_modules/.test(line))
      .map((line) =>
        line.replace(/^Defined in: \[([^\]]+?):(\d+)\]\([^)]*\)/, (whole, shown, n) => {
          const file = shown.replaceAll("\\_", "_");
          if (!file.startsWith("src/") || !existsSync(join(root, file))) {
            problems.push(`${path}: ${whole}`);
            return whole;
          }
          return `Defined in: [${shown}:${n}](${BLOB}${file}#L${n})`;
        }),
      )
      .map((line) =>
        line.replace(/^(#+ |- \[)(src(?:\/[\w-]+)*)(\]|$)/, (_, a, name, b) => a + specifier(name) + b),
      )
      .join("\n");
    writeFileSync(path, text);
  };
  walk(api);
  const sidebar = join(api, "typedoc-sidebar.json");
  const items = JSON.parse(readFileSync(sidebar, "utf8"));
  // One flat list, a module a line, in the site's sidebar: the root entry first, then each subpath.
  const flat = (list) =>
    list.flatMap(({ items: children, collapsed: _, ...item }) => [
      { ...item, text: specifier(item.link.replace(/^\/api\/|\.md$/g, "")) },
      ...flat(children ?? []),
    ]);
  writeFileSync(sidebar, `${JSON.stringify(flat(items), null, 1)}\n`);
  return problems;
}
