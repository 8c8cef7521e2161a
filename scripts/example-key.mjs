// npm run example:key: derive a key with the built CLI, then show that member order does not change it.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const cli = fileURLToPath(new URL("../dist/cli/index.js", import.meta.url));
const run = (args) => execFileSync(process.execPath, [cli, ...args], { encoding: "utf8" }).trim();

const task = "task-8812";
const tool = "openPullRequest";
const original = '{"repo":"acme/api","head":"fix-42","title":"Fix the retry loop","draft":false}';
const reordered = '{"draft":false,"title":"Fix the retry loop","head":"fix-42","repo":"acme/api"}';

const first = run(["key", "--task", task, "--tool", tool, "--args", original]);
const second = run(["key", "--task", task, "--tool", tool, "--args", reordered]);
console.log(`$ idemkey key --task ${task} --tool ${tool} --args '${original}'\n${first}\n`);
console.log(`$ idemkey key --task ${task} --tool ${tool} --args '${reordered}'\n${second}\n`);
console.log(`$ idemkey canon '${reordered}'\n${run(["canon", reordered])}\n`);
if (first !== second) {
  console.error("reordering the arguments changed the key: this is a bug");
  process.exit(1);
}
console.log("Same arguments in another order: same key.");
