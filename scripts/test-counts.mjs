// Used by .ci/run: prints the runner's real counts from Vitest's JSON report as "N passed, N failed".
import { readFileSync } from "node:fs";

const report = JSON.parse(readFileSync(process.argv[2] ?? ".tmp/vitest-report.json", "utf8"));
const skipped = report.numPendingTests + report.numTodoTests;
let line = `${report.numPassedTests} passed, ${report.numFailedTests} failed`;
if (skipped > 0) line += `, ${skipped} skipped`;
console.log(line);
if (report.numTotalTests === 0) {
  console.error("no test ran");
  process.exit(1);
}
