import { describe, expect, expectTypeOf, it } from "vitest";
import * as root from "../../src/index.js";
import * as owner from "../../src/owner/index.js";

// The source entries behind `idemkey` and `idemkey/owner` (test/packaging checks the packed package the same way).
describe("entry points by side", () => {
  it("keeps the owner's engine off the root and the harness off idemkey/owner", () => {
    expect(Object.keys(root)).not.toContain("idempotencyEngine");
    expect(Object.keys(root)).not.toContain("ProblemType");
    expect(owner.idempotencyEngine).toBeTypeOf("function");
    expect(owner.ProblemType).toBeTypeOf("object");
    expect(Object.keys(owner)).not.toContain("createHarness");
    expect(Object.keys(owner)).not.toContain("idempotencyKey");
  });

  it("has the errors and the store contract on both", () => {
    for (const name of [
      "IdemkeyError",
      "IdempotencyConflictError",
      "StoreError",
      "memoryStore",
      "RecordState",
    ]) {
      expect((root as Record<string, unknown>)[name], name).toBeDefined();
      expect((owner as Record<string, unknown>)[name], name).toBe((root as Record<string, unknown>)[name]);
    }
  });

  it("has the owner's types on idemkey/owner only", () => {
    // @ts-expect-error the engine's types moved to idemkey/owner
    type FromRoot = import("../../src/index.js").IdempotencyEngine;
    expectTypeOf<owner.IdempotencyEngine<unknown>>().toHaveProperty("begin");
    expectTypeOf<FromRoot>().toBeAny();
  });
});
