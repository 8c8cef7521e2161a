// Used by .ci/run: prints the runner's real counts from Vitest's JSON reports as "N passed, N failed".
// One report: that line. Several, given as "label=path" (one per Node of the matrix): a line per label, then the
// total line last, which is the one CI's reader takes. Each failed test is named above the counts (file, name, the
// first line of its failure), so a CI log cut to its tail still says what failed.
// A report may be followed by pytest's JUnit XML files after commas ("Node 22=vitest.json,pytest.xml"): the Python
// package's tests, which test/python/pytest.test.ts runs inside that leg; their counts are added to the leg's.
import { existsSync, readFileSync } from "node:fs";

const args = process.argv.slice(2);
if (args.length === 0)
  args.push(`.tmp/vitest-report.json${existsSync(".tmp/pytest.xml") ? ",.tmp/pytest.xml" : ""}`);

const line = (c) => {
  let text = `${c.passed} passed, ${c.failed} failed`;
  if (c.skipped > 0) text += `, ${c.skipped} skipped`;
  return text;
};

const failures = (report, label) =>
  (report.testResults ?? []).flatMap((file) =>
    (file.assertionResults ?? [])
      .filter((test) => test.status === "failed")
      .map((test) => {
        let first = String(test.failureMessages?.[0] ?? "")
          .split("\n")[0]
          .slice(0, 300);
        // Vitest 4.1 reports a timeout by the stack of the error it made to mark where the test began, whose message
        // is this placeholder, not "Test timed out".
        if (first === "Error: STACK_TRACE_ERROR")
          first = `timed out after ${Math.round(test.duration ?? 0)} ms`;
        return `FAILED${label === undefined ? "" : ` on ${label}`}: ${file.name.replace(process.cwd() + "/", "")} > ${test.fullName}: ${first}`;
      }),
  );

/** pytest's counts and failures from its JUnit XML (`--junitxml`): errors count as failures. */
function junit(path, label) {
  const xml = readFileSync(path, "utf8");
  const counts = { passed: 0, failed: 0, skipped: 0, all: 0 };
  for (const [suite] of xml.matchAll(/<testsuite\b[^>]*>/g)) {
    const n = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(suite)?.[1] ?? 0);
    const failed = n("failures") + n("errors");
    counts.all += n("tests");
    counts.failed += failed;
    counts.skipped += n("skipped");
    counts.passed += n("tests") - failed - n("skipped");
  }
  const fromXml = (text) =>
    text
      .replace(/&quot;/g, '"')
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&amp;/g, "&");
  const lines = [];
  for (const [, attrs, body] of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const failure = /<(?:failure|error)\b[^>]*?message="([^"]*)"/.exec(body ?? "");
    if (!failure) continue;
    const attr = (name) => fromXml(new RegExp(`\\b${name}="([^"]*)"`).exec(attrs)?.[1] ?? "");
    const first = fromXml(failure[1]).split("\n")[0].slice(0, 300);
    lines.push(
      `FAILED${label === undefined ? "" : ` on ${label}`}: python/tests > ${attr("classname")} > ${attr("name")}: ${first}`,
    );
  }
  return { counts, lines };
}

const total = { passed: 0, failed: 0, skipped: 0, all: 0 };
const lines = [];
let empty = false;
for (const arg of args) {
  const at = arg.indexOf("=");
  const label = at > 0 ? arg.slice(0, at) : undefined;
  const [path, ...xmls] = (at > 0 ? arg.slice(at + 1) : arg).split(",");
  const report = JSON.parse(readFileSync(path, "utf8"));
  const counts = {
    passed: report.numPassedTests,
    failed: report.numFailedTests,
    skipped: report.numPendingTests + report.numTodoTests,
  };
  if (report.numTotalTests === 0) empty = true;
  for (const failure of failures(report, label)) console.log(failure);
  for (const xml of xmls) {
    const python = junit(xml, label);
    for (const failure of python.lines) console.log(failure);
    counts.passed += python.counts.passed;
    counts.failed += python.counts.failed;
    counts.skipped += python.counts.skipped;
  }
  if (label !== undefined) lines.push(`${label}: ${line(counts)}`);
  total.passed += counts.passed;
  total.failed += counts.failed;
  total.skipped += counts.skipped;
}
for (const text of lines) console.log(text);
if (args.length > 1 || args[0].indexOf("=") <= 0) console.log(line(total));
if (empty) {
  console.error("no test ran");
  process.exit(1);
}
