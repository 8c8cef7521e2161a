import { expect, describe as group, it } from "vitest";
import { createIdempotentFetch } from "../../src/fetch/index.js";
import { createHarness, defineTool } from "../../src/harness/index.js";
import { mcpDedupe } from "../../src/mcp/index.js";
import { describe, describeThrown } from "../../src/options/describe.js";
import { checkNumber, numberOption } from "../../src/options/number-option.js";
import { idempotencyEngine } from "../../src/owner/engine.js";
import { memoryStore } from "../../src/store/memory.js";

group("checkNumber", () => {
  it.each([
    [{}, [0, 1.5, 1e9], [-1, Number.NaN, Number.POSITIVE_INFINITY, "1", null], "a finite number >= 0"],
    [{ exclusive: true }, [0.1, 30_000], [0, -1, Number.POSITIVE_INFINITY], "a finite number > 0"],
    [{ infinite: true }, [0, Number.POSITIVE_INFINITY], [-1, Number.NaN], "a number >= 0"],
    [{ integer: true }, [0, 3], [1.5, -1, Number.POSITIVE_INFINITY, 2 ** 53], "an integer >= 0"],
    [{ integer: true, min: 1 }, [1, 1000], [0, 0.5], "an integer >= 1"],
    [{ integer: true, max: 65_535 }, [0, 65_535], [65_536, -1], "an integer from 0 to 65535"],
  ] as const)("%j accepts %j, refuses %j as %s", (rule, good, bad, wanted) => {
    for (const value of good) expect(checkNumber("options.n", value, rule)).toBe(value);
    for (const value of bad) {
      expect(() => checkNumber("options.n", value, rule)).toThrow(
        new TypeError(`options.n must be ${wanted}, got ${describe(value)}`),
      );
    }
  });

  it("falls back only for undefined", () => {
    expect(numberOption("options.n", undefined, 7)).toBe(7);
    expect(() => numberOption("options.n", null, 7)).toThrow(
      /options\.n must be a finite number >= 0, got null/,
    );
  });
});

group("describe", () => {
  it("names what it got, the value where it is short", () => {
    expect([1.5, -1, Number.NaN, true, undefined, null].map(describe)).toEqual([
      "1.5",
      "-1",
      "NaN",
      "true",
      "undefined",
      "null",
    ]);
    expect(describe("")).toBe("an empty string");
    expect(describe("abc")).toBe('"abc"');
    expect(describe("x".repeat(100))).toBe(JSON.stringify(`${"x".repeat(57)}...`));
    expect([{ a: 1 }, [1], () => 1, Symbol("s")].map(describe)).toEqual([
      "an object",
      "an array",
      "a function",
      "a symbol",
    ]);
  });

  it("describeThrown names an error without a message by its class and code", () => {
    class TimeoutError extends Error {}
    expect(describeThrown(new Error("boom"))).toBe("boom");
    expect(describeThrown(Object.assign(new TimeoutError(), { code: "ETIMEDOUT" }))).toBe(
      "TimeoutError with no message (code ETIMEDOUT)",
    );
    expect(describeThrown("plain")).toBe("plain");
  });
});

group("every numeric option goes through the one check", () => {
  const store = memoryStore();
  it.each<[string, () => unknown, string]>([
    [
      "harness leaseMs",
      () => createHarness({ leaseMs: 0 }),
      "options.leaseMs must be a finite number > 0, got 0",
    ],
    [
      "harness wait.timeoutMs",
      () => createHarness({ wait: { timeoutMs: -5 } }),
      "options.wait.timeoutMs must be a number >= 0, got -5",
    ],
    [
      "harness retry.retries",
      () => createHarness({ retry: { retries: 1.5 } }),
      "options.retry.retries must be an integer >= 0, got 1.5",
    ],
    [
      "tool timeoutMs",
      () => defineTool({ name: "t", effect: "keyed", timeoutMs: "5" as never, run: async () => 1 }),
      'tool.timeoutMs of "t" must be a finite number > 0, got "5"',
    ],
    [
      "middleware leaseMs",
      () => idempotencyEngine({ store, scope: "single-tenant", leaseMs: 1.5 }),
      "options.leaseMs must be an integer >= 1, got 1.5",
    ],
    [
      "MCP dedupe leaseMs",
      () => mcpDedupe({ store, leaseMs: -1 }),
      "options.leaseMs must be a finite number > 0, got -1",
    ],
    [
      "fetch maxRetryAfterMs",
      () => createIdempotentFetch({ maxRetryAfterMs: Number.NaN }),
      "options.maxRetryAfterMs must be a number >= 0, got NaN",
    ],
  ])("%s", (_, make, message) => {
    expect(make).toThrow(new TypeError(message));
  });

  it("harness purge limit and engine purge batchSize", async () => {
    const harness = createHarness({ store });
    await expect(harness.purge({ limit: 0 })).rejects.toThrow(
      new TypeError("options.limit must be an integer >= 1, got 0"),
    );
    const engine = idempotencyEngine({ store, scope: "single-tenant" });
    await expect(engine.purge({ batchSize: 2.5 })).rejects.toThrow(
      new TypeError("options.batchSize must be an integer >= 1, got 2.5"),
    );
  });
});
