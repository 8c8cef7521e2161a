import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

// .ci/run's check that every test a doc names exists and passed, on a tiny repository of its own: a test file, a
// Vitest JSON report of it, and docs naming its tests.
const script = fileURLToPath(new URL("../../scripts/check-claims.mjs", import.meta.url));
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const SOURCE = `import { describe, it } from "vitest";
describe("claims", () => {
  describe("pay", () => {
    it("charges once", () => {});
    it("refunds once", () => {});
  });
  it.skip("a | pipe", () => {});
});
`;

type Test = [ancestors: string[], title: string, status: string];

/** A repository with test/x.test.ts, the given docs and reports; the reports name files by absolute path. */
function repo(
  docs: Record<string, string>,
  reports: Test[][] = [],
  source = SOURCE,
): { root: string; args: string[] } {
  const root = mkdtempSync(join(tmpdir(), "idemkey-claims-"));
  dirs.push(root);
  const files: Record<string, string> = { "test/x.test.ts": source, ...docs };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  const args = reports.map((tests, n) => {
    const path = join(root, `report-${n}.json`);
    const assertionResults = tests.map(([ancestorTitles, title, status]) => ({
      ancestorTitles,
      title,
      status,
    }));
    writeFileSync(
      path,
      JSON.stringify({ testResults: [{ name: join(root, "test/x.test.ts"), assertionResults }] }),
    );
    return `Node ${20 + n}=${path}`;
  });
  return { root, args };
}

function check(root: string, args: string[]) {
  const out = spawnSync(process.execPath, [script, "--root", root, ...args], { encoding: "utf8" });
  return { status: out.status, lines: out.stdout.trimEnd().split("\n"), stderr: out.stderr };
}

const ALL_PASSED: Test[] = [
  [["claims", "pay"], "charges once", "passed"],
  [["claims", "pay"], "refunds once", "passed"],
  [["claims"], "a | pipe", "skipped"],
];

describe("scripts/check-claims.mjs against reports", () => {
  it("passes a reference to a test that passed, and says so in its summary line", () => {
    const { root, args } = repo({ "README.md": "Once: `test/x.test.ts > claims > pay > charges once`.\n" }, [
      ALL_PASSED,
    ]);
    const out = check(root, args);
    expect(out.lines).toEqual([
      'claims: 1 test references in 1 of 1 docs checked against 1 report: 0 broken, 0 "shown by" rows naming no test',
    ]);
    expect(out.status).toBe(0);
  });

  it("fails a reference to a file that does not exist, naming the doc's line", () => {
    const { root, args } = repo({ "docs/a.md": "# A\n\nSee `test/gone.test.ts > claims > pay`.\n" }, [
      ALL_PASSED,
    ]);
    const out = check(root, args);
    expect(out.lines[0]).toBe("docs/a.md:3: `test/gone.test.ts > claims > pay`: file missing");
    expect(out.lines.at(-1)).toMatch(/: 1 broken,/);
    expect(out.status).toBe(1);
  });

  it("fails a title no test in the reports has (a renamed test)", () => {
    const { root, args } = repo({ "README.md": "`test/x.test.ts > claims > pay > charges twice`\n" }, [
      ALL_PASSED,
    ]);
    const out = check(root, args);
    expect(out.lines[0]).toBe(
      "README.md:1: `test/x.test.ts > claims > pay > charges twice`: no test with that name",
    );
    expect(out.status).toBe(1);
  });

  it("fails a test that was skipped in every report, and takes one that passed on one runtime only", () => {
    const skippedOn22: Test[] = ALL_PASSED.map(([a, t, s]) => [a, t, t === "charges once" ? "skipped" : s]);
    const skippedEverywhere = repo({ "README.md": "`test/x.test.ts > claims > a \\| pipe`\n" }, [
      ALL_PASSED,
      ALL_PASSED,
    ]);
    const out = check(skippedEverywhere.root, skippedEverywhere.args);
    expect(out.lines[0]).toBe(
      "README.md:1: `test/x.test.ts > claims > a | pipe`: not passed (skipped or failed) in any report",
    );
    expect(out.status).toBe(1);
    const once = repo({ "README.md": "`test/x.test.ts > claims > pay > charges once`\n" }, [
      skippedOn22,
      ALL_PASSED,
    ]);
    expect(check(once.root, once.args).status).toBe(0);
  });

  it("takes a suite named with its skip-by-design reason on one leg as the same suite, which must pass on another", () => {
    const label = " (skipped: run once, on CI's Node 24 leg)";
    const labelled: Test[] = ALL_PASSED.map(([[first, ...rest], t]) => [
      [`${first}${label}`, ...rest],
      t,
      "skipped",
    ]);
    const doc = { "README.md": "`test/x.test.ts > claims > pay`\n" };
    const once = repo(doc, [labelled, ALL_PASSED]);
    expect(check(once.root, once.args).status).toBe(0);
    const nowhere = repo(doc, [labelled, labelled]);
    const out = check(nowhere.root, nowhere.args);
    expect(out.lines[0]).toMatch(
      /`test\/x.test.ts > claims > pay`: not passed \(skipped or failed\) in any report/,
    );
    expect(out.status).toBe(1);
  });

  it("takes a describe prefix when every test under it passed, and fails it when one did not", () => {
    const doc = {
      "docs/stores/b.md": "| claim | shown by |\n|---|---|\n| once | `test/x.test.ts > claims > pay` |\n",
    };
    const passed = repo(doc, [ALL_PASSED]);
    expect(check(passed.root, passed.args).status).toBe(0);
    const oneFailed: Test[] = ALL_PASSED.map(([a, t, s]) => [a, t, t === "refunds once" ? "failed" : s]);
    const failed = repo(doc, [oneFailed]);
    const out = check(failed.root, failed.args);
    expect(out.lines[0]).toBe(
      'docs/stores/b.md:3: `test/x.test.ts > claims > pay`: not passed (skipped or failed) in any report (1 of 2, e.g. "claims > pay > refunds once")',
    );
    // A prefix must stop at a title: "claims > pa" names no describe block.
    const partial = repo({ "README.md": "`test/x.test.ts > claims > pa`\n" }, [ALL_PASSED]);
    expect(check(partial.root, partial.args).lines[0]).toMatch(/: no test with that name$/);
  });

  it("takes a file alone as every test in it, and fails a file that ran in no report", () => {
    const { root, args } = repo({ "README.md": "`test/x.test.ts`\n" }, [ALL_PASSED]);
    expect(check(root, args).lines[0]).toMatch(
      /`test\/x.test.ts`: not passed .*\(1 of 3, e.g. "claims > a \| pipe"\)$/,
    );
    const notRun = repo({ "README.md": "`test/x.test.ts`\n" }, [[]]);
    const report = join(notRun.root, "other.json");
    writeFileSync(report, JSON.stringify({ testResults: [] }));
    expect(check(notRun.root, [report]).lines[0]).toBe(
      "README.md:1: `test/x.test.ts`: no test from this file in any report",
    );
  });

  it("stops with exit 2 on a report it cannot read", () => {
    const { root } = repo({ "README.md": "`test/x.test.ts`\n" });
    const out = check(root, [`Node 24=${join(root, "none.json")}`]);
    expect(out.status).toBe(2);
    expect(out.stderr).toMatch(/^check-claims: cannot read the report .*none\.json/);
  });

  it('fails a row of a "shown by" table that names no test, and takes one that says "not tested"', () => {
    const { root, args } = repo(
      {
        "README.md": [
          "| claim | holds | shown by |",
          "|---|---|---|",
          "| once | always | `test/x.test.ts > claims > pay > charges once` |",
          "| fast | mostly | not tested |",
          "| cheap | never | see the benchmarks |",
          "",
          "| other | table |",
          "|---|---|",
          "| no | column |",
        ].join("\n"),
      },
      [ALL_PASSED],
    );
    const out = check(root, args);
    expect(out.lines[0]).toBe('README.md:5: a "shown by" cell names no test and does not say "not tested"');
    expect(out.lines).toHaveLength(2);
    expect(out.status).toBe(1);
  });

  it("ignores code blocks and code spans that are not references", () => {
    const { root, args } = repo(
      {
        "README.md":
          "```sh\nnpx vitest run `test/gone.test.ts`\n```\nThe suite `test/stores/contract.ts`, `test/<x>.test.ts`.\n",
      },
      [ALL_PASSED],
    );
    const out = check(root, args);
    expect(out.lines).toHaveLength(1);
    expect(out.lines[0]).toMatch(/^claims: 0 test references/);
  });
});

describe("scripts/check-claims.mjs --static", () => {
  function checkStatic(docs: Record<string, string>, source?: string) {
    const { root } = repo(docs, [], source);
    return check(root, ["--static"]);
  }

  it("finds the titles in the file's source, escapes included", () => {
    const out = checkStatic(
      {
        "README.md":
          '`test/x.test.ts > claims > pay > charges once` and ``test/x.test.ts > it\'s "quoted"``\n',
      },
      `${SOURCE}it('it\\'s "quoted"', () => {});\n`,
    );
    expect(out.lines).toEqual([
      'claims: 2 test references in 1 of 1 docs checked: 0 broken, 0 "shown by" rows naming no test',
    ]);
    expect(out.status).toBe(0);
  });

  it("fails a missing file and a title its source does not spell", () => {
    const out = checkStatic({
      "README.md": "`test/gone.test.ts`\n`test/x.test.ts > claims > pay > charges twice`\n",
    });
    expect(out.lines.slice(0, 2)).toEqual([
      "README.md:1: `test/gone.test.ts`: file missing",
      'README.md:2: `test/x.test.ts > claims > pay > charges twice`: no test with that name ("charges twice" is not in the file\'s source)',
    ]);
    expect(out.status).toBe(1);
  });

  it("finds a title in a module the test file imports", () => {
    const { root } = repo(
      {
        "README.md": "`test/x.test.ts > shared > runs once`\n",
        "test/support/shared.ts":
          'import { it } from "vitest";\nexport const shared = () => it("runs once", () => {});\n',
      },
      [],
      'import { describe } from "vitest";\nimport { shared } from "./support/shared.js";\ndescribe("shared", shared);\n',
    );
    expect(check(root, ["--static"]).status).toBe(0);
  });

  it("leaves a title made at run time (it.each, a template) to the reports' check, and says how many", () => {
    const out = checkStatic(
      { "README.md": "`test/x.test.ts > claims > charges 3 times`\n" },
      'import { describe, it } from "vitest";\ndescribe("claims", () => {\n  it.each([3])("charges %i times", () => {});\n});\n',
    );
    expect(out.lines).toEqual([
      "claims: 1 test references in 1 of 1 docs checked, 1 left to the reports' check (titles made at run time): " +
        '0 broken, 0 "shown by" rows naming no test',
    ]);
    expect(out.status).toBe(0);
  });
});
