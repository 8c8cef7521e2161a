import { describe, expect, it } from "vitest";
import { RunError, UsageError } from "../../src/cli/errors.js";
import { IdemkeyError, isIdemkeyError } from "../../src/errors/index.js";
import { ClaimLost } from "../../src/harness/hold.js";
import { BodyError, Problem } from "../../src/inspector/respond.js";

// Every error idemkey throws is one of the family, internal ones included: whatever escapes (to a log, an
// onEvent handler, a test runner) is an Error with a stack, a literal name and the mark the guards read.

describe("internal errors are in the family", () => {
  it.each([
    ["ClaimLost", () => new ClaimLost()],
    ["BodyError", () => new BodyError(Problem.badRequest, "The body must be a JSON object")],
    ["UsageError", () => new UsageError("missing --tool <name>")],
    ["RunError", () => new RunError("cannot listen on 127.0.0.1:1: EACCES")],
  ])("%s", (name, make) => {
    const error = make();
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(IdemkeyError);
    expect(isIdemkeyError(error)).toBe(true);
    expect(error.name).toBe(name);
    expect(error.message).not.toBe("");
    expect(typeof error.stack).toBe("string");
  });

  it("BodyError keeps the problem it names", () => {
    expect(new BodyError(Problem.tooLarge, "too big").problem).toBe(Problem.tooLarge);
  });
});
