import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { frameworks } from "../../owner/apps.js";

/**
 * The HTTP middleware is an owner, not a caller: its contract is the owner-side table of test/owner/scenarios.ts
 * (`ownerSuite`), run for each framework by test/owner/middleware.test.ts. It is not repeated here; this check keeps
 * the pointer true, so that the integration table's report says where that row lives.
 */
const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8");

describe("integration contract: idempotency() (HTTP middleware)", () => {
  it(`its owner-side contract lives in test/owner/scenarios.ts (ownerSuite), run for ${frameworks
    .map((f) => f.name)
    .join(", ")} by test/owner/middleware.test.ts`, () => {
    expect(read("../../owner/scenarios.ts")).toContain("export function ownerSuite(");
    expect(read("../../owner/middleware.test.ts")).toMatch(
      /for \(const framework of frameworks\)[\s\S]*ownerSuite\(/,
    );
  });
});
