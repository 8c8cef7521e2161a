// npm run docs: the API reference from the TSDoc (TypeDoc, one module per subpath export in package.json), then the
// site (VitePress) with it under /api/. Offline: both read only the checkout. A dead link fails the build.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const entries = Object.keys(pkg.exports)
  .filter((subpath) => subpath !== "./package.json")
  .map((subpath) => (subpath === "." ? "src/index.ts" : `src/${subpath.slice(2)}/index.ts`));

function run(command, args) {
  const done = spawnSync(command, args, { stdio: "inherit" });
  if (done.status !== 0) {
    console.error(`npm run docs: ${command} ${args[0]} failed (exit ${done.status ?? done.signal})`);
    process.exit(1);
  }
}

run("npx", ["typedoc", ...entries.flatMap((entry) => ["--entryPoints", entry])]);
run("npx", ["vitepress", "build", "docs"]);
