// npm run docs [-- --out DIR]: the API reference from the TSDoc (TypeDoc with typedoc-plugin-markdown, one page per
// subpath export in package.json) as Markdown into docs/api/ with its sidebar, then the whole site (VitePress, from
// docs/, the API pages among the guide's, in one theme) into DIR (default docs/.vitepress/dist). Offline: both read
// only the checkout. A dead link between pages fails the build.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { fixApiPages } from "./docs-api.mjs";

const root = new URL("..", import.meta.url).pathname;
const args = process.argv.slice(2);
const at = args.indexOf("--out");
if ((at !== -1 && !args[at + 1]) || args.some((arg, i) => arg !== "--out" && i !== at + 1)) {
  console.error("npm run docs: usage: npm run docs [-- --out <dir>]");
  process.exit(2);
}
const out = resolve(at === -1 ? `${root}docs/.vitepress/dist` : args[at + 1]);

const pkg = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
const entries = Object.keys(pkg.exports)
  .filter((subpath) => subpath !== "./package.json")
  .map((subpath) => (subpath === "." ? "src/index.ts" : `src/${subpath.slice(2)}/index.ts`));

function run(command, commandArgs) {
  const done = spawnSync(command, commandArgs, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  if (done.status !== 0) {
    console.error(
      `npm run docs: ${command} ${commandArgs.slice(0, 2).join(" ")} failed (exit ${done.status ?? done.signal})`,
    );
    process.exit(1);
  }
}

// docs/api/ is generated: what an earlier run wrote for a subpath since removed must not linger in the site.
rmSync(`${root}docs/api`, { recursive: true, force: true });
run("npx", ["typedoc", ...entries.flatMap((entry) => ["--entryPoints", entry])]);
const problems = fixApiPages(root);
if (problems.length > 0) {
  console.error(`npm run docs: source links outside src/:\n${problems.join("\n")}`);
  process.exit(1);
}
run("npx", ["vitepress", "build", "docs", "--outDir", out]);
console.log(`npm run docs: the site is in ${out} (the API reference under api/)`);
