import { createHash, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import canonicalizePackage from "canonicalize";
import { describe, expect, it } from "vitest";
import { createHarness, defineTool } from "../../src/index.js";
import { idempotencyKey } from "../../src/key/index.js";

// Keys under a fleet secret (issue 12): HMAC-SHA256 instead of SHA-256, checked against vectors made with an
// independent RFC 8785 implementation, and through the harness, whose keys and recorded args hash both use it.

interface KeyedVector {
  description: string;
  taskId: string;
  tool: string;
  args: unknown;
  step?: string | number;
  secret: string;
  canonical: string;
  key: string;
}

const vectors = JSON.parse(
  readFileSync(new URL("../../test-vectors/keyed-keys.json", import.meta.url), "utf8"),
) as KeyedVector[];

describe("keys under a fleet secret", () => {
  it.each(vectors.map((v) => [v.description, v] as const))("%s", (_name, v) => {
    const options = { secret: v.secret, ...(v.step === undefined ? {} : { step: v.step }) };
    expect(idempotencyKey(v.taskId, v.tool, v.args, options)).toBe(v.key);
    const input = v.step === undefined ? [v.taskId, v.tool, v.args] : [v.taskId, v.tool, v.args, v.step];
    expect(canonicalizePackage(input)).toBe(v.canonical);
    expect(createHmac("sha256", v.secret).update(v.canonical).digest("hex")).toBe(v.key);
  });

  it("makes a masked 3-digit value unguessable from the key alone, where the plain key gives it away", () => {
    const args = (cvc: string) => ({ customer: "cus_1", cvc });
    const seen = idempotencyKey("task-1", "pay", args("417"));
    // Anyone can do this with a plain key: hash each candidate.
    const found = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, "0")).find(
      (cvc) =>
        createHash("sha256")
          .update(canonicalizePackage(["task-1", "pay", args(cvc)])!)
          .digest("hex") === seen,
    );
    expect(found).toBe("417");
    const secret = "fleet-secret-0123456789abcdef";
    const keyed = idempotencyKey("task-1", "pay", args("417"), { secret });
    const guessed = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, "0")).find(
      (cvc) =>
        createHash("sha256")
          .update(canonicalizePackage(["task-1", "pay", args(cvc)])!)
          .digest("hex") === keyed,
    );
    expect(guessed).toBeUndefined();
  });

  it("refuses a secret shorter than 16 bytes, naming the option", () => {
    expect(() => idempotencyKey("t", "x", {}, { secret: "short" })).toThrow(/options\.secret/);
    expect(() => createHarness({ keySecret: "short" })).toThrow(/options\.keySecret/);
    expect(() => createHarness({ keySecret: 42 as never })).toThrow(TypeError);
  });

  it("gives the harness's tools the keyed key, and records the args hash under the secret too", async () => {
    const secret = "fleet-secret-0123456789abcdef";
    const harness = createHarness({ keySecret: secret });
    const keys: string[] = [];
    const pay = defineTool({
      name: "pay",
      effect: "keyed",
      run: (_args: { customer: string; cvc: string }, ctx) => {
        keys.push(ctx.idempotencyKey);
        return { ok: true };
      },
    });
    const named = defineTool({
      name: "payNamed",
      effect: "keyed",
      identity: ({ customer }: { customer: string; cvc: string }) => ({ customer }),
      run: (_args: { customer: string; cvc: string }, ctx) => {
        keys.push(ctx.idempotencyKey);
        return { ok: true };
      },
    });
    const args = { customer: "cus_1", cvc: "417" };
    await harness.call("task-1", pay, args);
    await harness.call("task-1", named, args);
    expect(keys).toEqual([
      idempotencyKey("task-1", "pay", args, { secret }),
      idempotencyKey("task-1", "payNamed", { customer: "cus_1" }, { secret }),
    ]);
    expect(keys[0]).not.toBe(idempotencyKey("task-1", "pay", args));
    expect(harness.key("task-1", pay, args)).toBe(keys[0]);
    const entry = await harness.get(keys[0]!);
    expect(entry?.argsHash).toBe(
      createHmac("sha256", secret).update(canonicalizePackage(args)!).digest("hex"),
    );
  });
});
