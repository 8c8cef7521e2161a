import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_DEPTH } from "../../src/key/canonicalize.js";
import { callKeys } from "../../src/key/idempotency-key.js";
import { canonicalize, idempotencyKey, keyHash } from "../../src/key/index.js";
import { batch } from "./support/arbitraries.js";
import { outcome } from "./support/outcome.js";

/**
 * `callKeys` is what the harness derives per call from one write (src/key/idempotency-key.ts): it must give what
 * the three separate derivations give, texts and errors alike, since the ledger's records and the owners' keys
 * already hold those.
 */

const SECRET = "a fleet secret of 16+ bytes";

/** The three separately, as the harness derived them before; an error as `outcome` reports it. */
function separately(taskId: unknown, tool: unknown, args: unknown, step?: string | number, secret?: string) {
  return outcome(() => {
    const key = idempotencyKey(taskId as string, tool as string, args, {
      ...(step === undefined ? {} : { step }),
      ...(secret === undefined ? {} : { secret }),
    });
    const argsText = canonicalize(args);
    return JSON.stringify({ key, argsText, argsHash: keyHash(argsText, secret) });
  });
}

function together(taskId: unknown, tool: unknown, args: unknown, step?: string | number, secret?: string) {
  return outcome(() =>
    JSON.stringify(callKeys(taskId as string, tool as string, args, step, DEFAULT_MAX_DEPTH, secret)),
  );
}

const taskId = fc.constantFrom("task-8812", "tâche-é", "任务", "t");
const tool = fc.constantFrom("placeOrder", "send€", "x");
const step = fc.option(fc.oneof(fc.integer(), fc.string({ maxLength: 3 })), { nil: undefined });
const secret = fc.option(fc.constant(SECRET), { nil: undefined });

describe("callKeys gives the key, the canonical arguments and their hash of the separate derivations", () => {
  it("on 3,000 values with bad leaves, non-ASCII names, steps and a secret", () => {
    fc.assert(
      fc.property(batch, taskId, tool, step, secret, (values, t, name, s, k) => {
        for (const v of values) expect(together(t, name, v, s, k)).toEqual(separately(t, name, v, s, k));
      }),
      { numRuns: 250 },
    );
  });

  it("keeps the arguments' bytes apart from a key a toJSON derives meanwhile, in a buffer it grows", () => {
    const big = "x".repeat(40_000);
    const args = {
      b: { toJSON: () => idempotencyKey("inner", "tool", { big, more: big }) },
      a: [1, "é", { toJSON: () => canonicalize({ z: big }).length }],
    };
    const result = together("task", "tool", args);
    expect(result).toEqual(separately("task", "tool", args));
    expect(JSON.parse((result as { text: string }).text).argsText).toBe(canonicalize(args));
  });

  it("checks in idempotencyKey's order: taskId, tool, the arguments, then the step", () => {
    for (const [t, name, args, s] of [
      ["", "", Number.NaN, {}],
      ["t", 5, Number.NaN, {}],
      ["t", "tool", Number.NaN, {}],
      ["t", "tool", 1, {}],
      ["t\ud800", "tool", 1, undefined],
      ["t", "tool", { a: [undefined] }, 1],
    ] as const) {
      const got = together(t, name, args, s as never);
      expect(got).toEqual(separately(t, name, args, s as never));
      expect(got).not.toHaveProperty("text");
    }
  });
});
