import { describe, expect, it } from "vitest";
import { hashImplementation } from "../../src/index.js";

// This project's Worker has nodejs_compat (wrangler.jsonc), as @cloudflare/vitest-pool-workers requires: the core
// finds node:crypto through process.getBuiltinModule there. test/workers-nocompat is the leg without it.
describe("workerd with nodejs_compat", () => {
  it("hashes with the runtime's node:crypto", () => {
    const process = (globalThis as { process?: { getBuiltinModule?: unknown } }).process;
    expect(typeof process?.getBuiltinModule).toBe("function");
    expect(hashImplementation).toBe("node:crypto");
  });
});
