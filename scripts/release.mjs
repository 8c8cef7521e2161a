// npm run release: every check a release needs, then `npm publish --dry-run`. It never publishes: publishing is a
// person's decision, made after this passes. It refuses a dirty tree, since what it checked must be what a tag names.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

const root = new URL("..", import.meta.url).pathname;

const dirty = spawnSync("git", ["status", "--porcelain"], { cwd: root, encoding: "utf8" });
if (dirty.status !== 0) {
  console.error("npm run release: not a git checkout (git status failed)");
  process.exit(2);
}
if (dirty.stdout.trim() !== "") {
  const files = dirty.stdout.trim().split("\n").length;
  console.error(
    `npm run release: the tree is dirty (${files} file(s) changed or untracked): commit or stash first`,
  );
  process.exit(2);
}

const { version } = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
if (!readFileSync(`${root}CHANGELOG.md`, "utf8").includes(`\n## ${version}\n`)) {
  console.error(`npm run release: CHANGELOG.md has no section "## ${version}" for package.json's version`);
  process.exit(1);
}

/** Each step: its name, then the command. They run in this order and the first failure stops the release. */
const STEPS = [
  ["lint", "npm", ["run", "lint"]],
  ["type-check", "npm", ["run", "typecheck"]],
  ["claims (static)", "node", ["scripts/check-claims.mjs", "--static"]],
  // The tarball: its files and size budget, publint, attw (ESM-only), its subpaths without their peers, the README's
  // blocks; then fresh `npm init -y` projects on every runtime; then the docs site with its link check.
  ["package", "npx", ["vitest", "run", "test/packaging", "test/docs"]],
  ["publish (dry run)", "npm", ["publish", "--dry-run"]],
];

for (const [name, command, args] of STEPS) {
  console.log(`\n== ${name}: ${command} ${args.join(" ")}`);
  const done = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (done.status !== 0) {
    console.error(
      `npm run release: ${name} failed (exit ${done.status ?? done.signal}); nothing was published`,
    );
    process.exit(1);
  }
}
console.log(`\nnpm run release: idemkey ${version} is ready; nothing was published (npm publish --dry-run)`);
