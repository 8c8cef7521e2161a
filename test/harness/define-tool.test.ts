import { describe, expect, expectTypeOf, it, vi } from "vitest";
import {
  canonicalize,
  createHarness,
  defineTool,
  type HarnessOptions,
  idempotencyKey,
  sha256Hex,
  type Tool,
  type ToolDefinition,
} from "../../src/index.js";

const run = () => 1;

describe("defineTool", () => {
  it.each<[string, Partial<ToolDefinition<unknown, unknown>>, RegExp]>([
    ["a missing name", { name: "", effect: "keyed", run }, /tool\.name must be a non-empty string/],
    [
      "an unknown effect",
      { name: "x", effect: "write" as never, run },
      /tool\.effect of "x" must be one of read, idempotent, keyed, unguarded/,
    ],
    ["a missing effect", { name: "x", run } as never, /tool\.effect/],
    ["a missing run", { name: "x", effect: "keyed" }, /tool\.run of "x"/],
    [
      "an identity that is not a function",
      { name: "x", effect: "keyed", run, identity: "repo" as never },
      /tool\.identity/,
    ],
    [
      "approval on a read tool",
      { name: "x", effect: "read", run, requiresApproval: true },
      /not supported for the read tool/,
    ],
    [
      "reconcile on a keyed tool",
      { name: "x", effect: "keyed", run, reconcile: () => undefined },
      /only for unguarded tools/,
    ],
  ])("rejects %s with a TypeError naming the field", (_, definition, message) => {
    expect(() => defineTool(definition as ToolDefinition<unknown, unknown>)).toThrow(TypeError);
    expect(() => defineTool(definition as ToolDefinition<unknown, unknown>)).toThrow(message);
  });

  it("returns a frozen plain object", () => {
    const tool = defineTool({ name: "x", effect: "keyed", run });
    expect(Object.isFrozen(tool)).toBe(true);
    expect(tool).toMatchObject({ name: "x", effect: "keyed", requiresApproval: false });
  });

  it("harness.call only takes tools made by defineTool", async () => {
    const fake = { name: "x", effect: "keyed", run } as unknown as Tool<object, number>;
    await expect(createHarness().call("t", fake, {})).rejects.toThrow(/made by defineTool/);
  });
});

describe("the key of a call", () => {
  const tool = defineTool({ name: "openPullRequest", effect: "keyed", run });
  const harness = createHarness();

  it("is idempotencyKey(taskId, tool.name, args), which is SHA-256 of the canonical [taskId, tool, args]", () => {
    const args = { repo: "acme/api", head: "fix-42" };
    const key = harness.key("task-8812", tool, args);
    expect(key).toBe(idempotencyKey("task-8812", "openPullRequest", args));
    expect(key).toBe(sha256Hex(canonicalize(["task-8812", "openPullRequest", args])));
  });

  it("with a step, hashes [taskId, tool, identityOrArgs, step]", () => {
    const key = harness.key("t", tool, { a: 1 }, { step: 3 });
    expect(key).toBe(sha256Hex(canonicalize(["t", "openPullRequest", { a: 1 }, 3])));
  });

  it("with an identity, hashes what the identity returns", () => {
    const byRepo = defineTool({
      name: "openPullRequest",
      effect: "keyed",
      identity: (args: { repo: string; title: string }) => ({ repo: args.repo }),
      run,
    });
    expect(harness.key("t", byRepo, { repo: "r", title: "A" })).toBe(
      harness.key("t", byRepo, { repo: "r", title: "B" }),
    );
    expect(harness.key("t", byRepo, { repo: "r", title: "A" }, { step: "s" })).toBe(
      sha256Hex(canonicalize(["t", "openPullRequest", { repo: "r" }, "s"])),
    );
  });

  it("rejects a bad task id or arguments before touching the ledger", async () => {
    await expect(harness.call("", tool, {})).rejects.toThrow(/taskId must be a non-empty string/);
    await expect(harness.call("t", tool, { n: Number.NaN })).rejects.toMatchObject({
      name: "CanonicalizationError",
      path: "$.args.n",
    });
    await expect(harness.call("t", tool, {}, { signal: "stop" as never })).rejects.toThrow(/options\.signal/);
  });
});

describe("createHarness options", () => {
  it.each<[string, HarnessOptions, RegExp]>([
    ["leaseMs", { leaseMs: 0 }, /options\.leaseMs must be a finite number > 0/],
    ["ttlMs", { ttlMs: -1 }, /options\.ttlMs/],
    ["retry.retries", { retry: { retries: 1.5 } }, /options\.retry\.retries must be an integer >= 0/],
    ["retry.factor", { retry: { factor: 0.5 } }, /options\.retry\.factor must be >= 1/],
    ["retry.maxDelayMs", { retry: { minDelayMs: 10, maxDelayMs: 5 } }, /options\.retry\.maxDelayMs/],
    [
      "retry.shouldRetry",
      { retry: { shouldRetry: true as never } },
      /options\.retry\.shouldRetry must be a function/,
    ],
    ["wait.timeoutMs", { wait: { timeoutMs: -5 } }, /options\.wait\.timeoutMs/],
    ["approvalTimeoutMs", { approvalTimeoutMs: Number.NaN }, /options\.approvalTimeoutMs/],
    ["onEvent", { onEvent: "log" as never }, /options\.onEvent must be a function/],
    ["store", { store: {} as never }, /options\.store must implement the Store contract/],
  ])("rejects a bad %s with a TypeError naming it", (_, options, message) => {
    expect(() => createHarness(options)).toThrow(TypeError);
    expect(() => createHarness(options)).toThrow(message);
  });

  it("never writes into the caller's options", () => {
    const options = Object.freeze({ retry: Object.freeze({ retries: 1 }), wait: Object.freeze({}) });
    expect(() => createHarness(options)).not.toThrow();
  });

  it("keeps calling when onEvent throws", async () => {
    const harness = createHarness({
      onEvent: () => {
        throw new Error("logger down");
      },
    });
    const tool = defineTool({ name: "x", effect: "keyed", run });
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    let warnings: string[];
    try {
      expect(await harness.call("t", tool, {})).toBe(1);
      warnings = warn.mock.calls.map((args) => String(args[0]));
    } finally {
      warn.mockRestore();
    }
    expect(warnings.some((w) => /onEvent threw on a "executed" event/.test(w))).toBe(true);
  });
});

describe("types", () => {
  it("infers the arguments and the result from run, and checks them at the call", () => {
    const tool = defineTool({
      name: "openPullRequest",
      effect: "keyed",
      identity: (args: { repo: string; head: string; title: string }) => ({
        repo: args.repo,
        head: args.head,
      }),
      run: async (args: { repo: string; head: string; title: string }, ctx) => {
        expectTypeOf(ctx.idempotencyKey).toEqualTypeOf<string>();
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
        return { number: 42, url: `https://example.test/${args.repo}` };
      },
    });
    const harness = createHarness();
    expectTypeOf(harness.call<{ repo: string; head: string; title: string }, { number: number; url: string }>)
      .parameter(1)
      .toEqualTypeOf(tool);
    const call = () => harness.call("t", tool, { repo: "r", head: "h", title: "x" });
    expectTypeOf(call).returns.toEqualTypeOf<Promise<{ number: number; url: string }>>();
    // @ts-expect-error: a missing argument field is a type error
    void (() => harness.call("t", tool, { repo: "r" }));
  });
});
