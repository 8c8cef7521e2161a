// npm run docs [-- --out DIR]: the site (VitePress, from docs/) into DIR (default docs/.vitepress/dist), then the API
// reference from the TSDoc (TypeDoc, one module per subpath export in package.json) into DIR/api. Offline: both
// read only the checkout. A dead link between pages fails the build.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

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

run("npx", ["vitepress", "build", "docs", "--outDir", out]);
run("npx", ["typedoc", "--out", `${out}/api`, ...entries.flatMap((entry) => ["--entryPoints", entry])]);
console.log(`npm run docs: the site is in ${out} (the API reference under api/)`);
