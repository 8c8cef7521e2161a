import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { hashImplementation } from "../../src/index.js";

/**
 * The first file of the Bun and Deno legs (test/runtimes/vitest.config.ts): proves that the leg runs where it says,
 * the runner and its workers alike, so that a leg that silently fell back to Node fails instead of passing.
 */
const expected = process.env.IDEMKEY_RUNTIME;
const versions = process.versions as Record<string, string | undefined>;
const globals = globalThis as { Bun?: unknown; Deno?: { version?: { deno?: string } } };

describe(`the ${expected} leg`, () => {
  it("runs this worker on that runtime", () => {
    expect(["bun", "deno"]).toContain(expected);
    if (expected === "bun") {
      expect(versions.bun).toMatch(/^\d+\.\d+/);
      expect(globals.Bun).toBeDefined();
    } else {
      expect(versions.deno).toMatch(/^\d+\.\d+/);
      expect(globals.Deno?.version?.deno).toBe(versions.deno);
    }
  });

  it("started the runner on it too (the config records the runner's runtime)", () => {
    expect(process.env.IDEMKEY_RUNNER_RUNTIME).toBe(expected);
  });

  it("spawns children on it: process.execPath is the runtime's binary", () => {
    const child = spawnSync(
      process.execPath,
      expected === "deno"
        ? ["eval", "console.log('deno ' + Deno.version.deno)"]
        : ["-e", "console.log('bun ' + Bun.version)"],
      { encoding: "utf8" },
    );
    expect(child.status).toBe(0);
    expect(child.stdout.trim()).toBe(`${expected} ${expected === "deno" ? versions.deno : versions.bun}`);
  });

  it("hashes with the runtime's node:crypto", () => {
    expect(hashImplementation).toBe("node:crypto");
  });
});
