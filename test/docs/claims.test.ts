import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The fast half of the claims check, so a local `npm test` catches a renamed or moved test a doc names: every file a
// reference in README.md or docs/ names exists, each title in it is spelled in that file's source (or in a module it
// imports), and every row of a "shown by" table names a test or says "not tested". A title a file makes at run time
// (it.each, a template) is left to .ci/run's "claims" step, which checks every reference against the JSON reports of
// the run: that the test exists and passed (scripts/check-claims.mjs says how).
const script = fileURLToPath(new URL("../../scripts/check-claims.mjs", import.meta.url));

describe("the docs' test references", () => {
  it("name test files that exist and titles their sources spell", () => {
    const out = spawnSync(process.execPath, [script, "--static"], { encoding: "utf8" });
    expect(out.stderr).toBe("");
    // On failure, the lines above the summary name each broken reference by doc and line.
    expect(out.stdout.trimEnd().split("\n").slice(0, -1)).toEqual([]);
    expect(out.status).toBe(0);
  });
});
