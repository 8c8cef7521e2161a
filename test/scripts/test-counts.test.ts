import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

// .ci/run's reader of Vitest's JSON reports: a line per Node of the matrix, then the total line last.
const script = fileURLToPath(new URL("../../scripts/test-counts.mjs", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "idemkey-counts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function report(
  name: string,
  passed: number,
  failed: number,
  pending: number,
  testResults: unknown[] = [],
): string {
  const path = join(dir, name);
  const total = passed + failed + pending;
  writeFileSync(
    path,
    JSON.stringify({
      numPassedTests: passed,
      numFailedTests: failed,
      numPendingTests: pending,
      numTodoTests: 0,
      numTotalTests: total,
      testResults,
    }),
  );
  return path;
}

describe("scripts/test-counts.mjs", () => {
  it("prints the counts per label and one total line last", () => {
    const out = spawnSync(
      process.execPath,
      [script, `Node 24=${report("24.json", 900, 0, 0)}`, `Node 20=${report("20.json", 880, 1, 20)}`],
      { encoding: "utf8" },
    );
    expect(out.stdout).toBe(
      "Node 24: 900 passed, 0 failed\nNode 20: 880 passed, 1 failed, 20 skipped\n1780 passed, 1 failed, 20 skipped\n",
    );
    expect(out.status).toBe(0);
  });

  it("prints the one line for a single report, and fails when no test ran", () => {
    const one = spawnSync(process.execPath, [script, report("one.json", 3, 0, 0)], { encoding: "utf8" });
    expect(one.stdout).toBe("3 passed, 0 failed\n");
    const none = spawnSync(process.execPath, [script, report("none.json", 0, 0, 0)], { encoding: "utf8" });
    expect(none.status).toBe(1);
  });

  it("names each failed test above the counts, so a log cut to its tail still says what failed", () => {
    const failing = [
      {
        name: join(process.cwd(), "test/a.test.ts"),
        assertionResults: [
          { status: "passed", fullName: "a works", failureMessages: [] },
          {
            status: "failed",
            fullName: "a breaks",
            failureMessages: ["AssertionError: expected 1 to be 2\n    at x"],
          },
          {
            status: "failed",
            fullName: "a hangs",
            duration: 120003.4,
            failureMessages: ["Error: STACK_TRACE_ERROR\n    at task (chunk-artifact.js:1784:27)"],
          },
        ],
      },
    ];
    const out = spawnSync(
      process.execPath,
      [script, `Node 22=${report("22.json", 1, 2, 0, failing)}`, `Node 20=${report("20b.json", 2, 0, 0)}`],
      { encoding: "utf8" },
    );
    expect(out.stdout).toBe(
      "FAILED on Node 22: test/a.test.ts > a breaks: AssertionError: expected 1 to be 2\n" +
        "FAILED on Node 22: test/a.test.ts > a hangs: timed out after 120003 ms\n" +
        "Node 22: 1 passed, 2 failed\nNode 20: 2 passed, 0 failed\n3 passed, 2 failed\n",
    );
  });

  it("adds pytest's counts from the JUnit XML given after a comma, and names its failures", () => {
    const xml = join(dir, "pytest.xml");
    writeFileSync(
      xml,
      '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1" ' +
        'skipped="2" tests="10" time="1.0"><testcase classname="tests.test_keys" name="test_a" time="0.1">' +
        '<failure message="assert 1 == 2">x</failure></testcase></testsuite></testsuites>',
    );
    const out = spawnSync(
      process.execPath,
      [script, `Node 22=${report("22p.json", 5, 0, 0)},${xml}`, `Node 20=${report("20p.json", 5, 0, 0)}`],
      { encoding: "utf8" },
    );
    expect(out.stdout).toBe(
      "FAILED on Node 22: python/tests > tests.test_keys > test_a: assert 1 == 2\n" +
        "Node 22: 11 passed, 2 failed, 2 skipped\nNode 20: 5 passed, 0 failed\n16 passed, 2 failed, 2 skipped\n",
    );
  });
});
