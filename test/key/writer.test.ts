import { createHash, createHmac } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CanonicalizationError } from "../../src/errors/index.js";
import { canonicalCall, canonicalize, idempotencyKey } from "../../src/key/index.js";
import { outcome } from "./support/outcome.js";
import { referenceCanonicalize } from "./support/reference-canonicalize.js";

/**
 * The canonical form is written as UTF-8 bytes into one reused buffer (src/key/writer.ts): its hand-written
 * encoder, its number digits and its reuse across nested and failed writes are checked here against the 0.1
 * reference serializer, JSON.stringify and Number::toString.
 */

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Every escape class, ASCII edges, each UTF-8 length, surrogate pairs and lone surrogates of both halves. */
const unit = fc.constantFrom(
  "\u0000",
  "\u0008",
  "\t",
  "\n",
  "\u000b",
  "\f",
  "\r",
  "\u001f",
  " ",
  '"',
  "\\",
  "/",
  "~",
  "\u007f",
  "\u0080",
  "\u00ff",
  "\u0100",
  "\u07ff",
  "\u0800",
  "\u2028",
  "\ud7ff",
  "\ue000",
  "\uffff",
  "\ud800\udc00",
  "\udbff\udfff",
  "\ud83d\ude00",
  "\ud800",
  "\udbff",
  "\udc00",
  "\udfff",
  "a",
  "Z",
);

/** Strings short and long (the 256-unit border between the loop and the native encoder), of those units. */
const text = fc.oneof(
  fc.string({ unit, maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc
    .tuple(fc.integer({ min: 250, max: 262 }), fc.string({ unit, maxLength: 3 }), fc.boolean())
    .map(([length, tail, atEnd]) => {
      const filler = "x".repeat(length);
      return atEnd ? filler + tail : tail + filler;
    }),
  fc.string({ unit, minLength: 240, maxLength: 300 }),
);

const number = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.integer({ min: -(2 ** 31) - 2, max: -(2 ** 31) + 2 }),
  fc.integer({ min: 2 ** 31 - 2, max: 2 ** 31 + 2 }),
  fc.integer({ min: -1000, max: 1000 }),
  fc.constantFrom(
    0,
    -0,
    9,
    10,
    99,
    100,
    -9,
    -10,
    1e21,
    1e-7,
    5e-324,
    Number.MAX_VALUE,
    Number.MAX_SAFE_INTEGER,
    -Number.MAX_SAFE_INTEGER,
    2 ** 53,
    4294967295,
    4294967296,
  ),
);

describe("the byte writer", () => {
  it("writes strings as JSON.stringify does, in UTF-8, and refuses lone surrogates as the reference does", () => {
    fc.assert(
      fc.property(text, text, (value, name) => {
        expect(outcome(() => canonicalize(value))).toEqual(outcome(() => referenceCanonicalize(value)));
        const object = { [name]: value, z: [value] };
        expect(outcome(() => canonicalize(object))).toEqual(outcome(() => referenceCanonicalize(object)));
        if (value.isWellFormed()) expect(canonicalize(value)).toBe(JSON.stringify(value));
      }),
      { numRuns: 3000 },
    );
  });

  it("hashes the UTF-8 bytes of the canonical text", () => {
    fc.assert(
      fc.property(
        text.filter((t) => t.length > 0 && t.isWellFormed()),
        text,
        (taskId, value) => {
          const args = { value, list: [value, 1] };
          const expected = outcome(() => referenceCanonicalize([taskId, "tool", args]));
          const got = outcome(() => canonicalCall(taskId, "tool", args));
          // The reference reports from "$"; the key derivation from "$.args".
          if ("text" in (expected as object)) {
            expect(got).toEqual(expected);
            expect(idempotencyKey(taskId, "tool", args)).toBe(sha256((expected as { text: string }).text));
          } else {
            expect(got).toMatchObject({ error: "CanonicalizationError", path: "$.args.list[0]" });
            expect(outcome(() => idempotencyKey(taskId, "tool", args))).toEqual(got);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("writes numbers as Number::toString does, 32-bit integers and their edges included", () => {
    fc.assert(
      fc.property(number, (value) => {
        const expected = Number.isFinite(value) ? { text: String(value) } : undefined;
        if (expected) expect(outcome(() => canonicalize(value))).toEqual(expected);
        expect(outcome(() => canonicalize([value, { n: value }]))).toEqual(
          outcome(() => referenceCanonicalize([value, { n: value }])),
        );
      }),
      { numRuns: 3000 },
    );
    for (let n = -20_000; n <= 20_000; n++) expect(canonicalize(n)).toBe(String(n));
  });

  it("writes short decimal fractions (k / 10^d) as Number::toString does, at every scale and near every limit", () => {
    const fraction = fc
      .tuple(
        fc.oneof(
          fc.integer({ min: -2000, max: 2000 }),
          fc.integer(),
          fc.integer({ min: 2 ** 31 - 3, max: 2 ** 31 + 3 }),
          fc.integer({ min: -(2 ** 31) - 3, max: -(2 ** 31) + 3 }),
          fc.integer({ min: -(2 ** 53), max: 2 ** 53 }),
        ),
        fc.integer({ min: 1, max: 8 }),
      )
      .map(([k, d]) => k / 10 ** d);
    const near = fc
      .tuple(
        fc.integer({ min: -1000, max: 1000 }),
        fc.integer({ min: 1, max: 7 }),
        fc.integer({ min: -3, max: 3 }),
      )
      .map(([k, d, ulps]) => {
        // The neighbours of k / 10^d, a few units in the last place away: they must not print as k / 10^d.
        const view = new DataView(new ArrayBuffer(8));
        view.setFloat64(0, k / 10 ** d);
        view.setBigInt64(0, view.getBigInt64(0) + BigInt(ulps));
        return view.getFloat64(0);
      })
      .filter(Number.isFinite); // below 0's bits are NaNs
    fc.assert(
      fc.property(fc.oneof(fraction, near, fc.double({ noNaN: true, noDefaultInfinity: true })), (value) => {
        expect(canonicalize(value)).toBe(String(value));
        expect(canonicalize({ p: value, q: [value] })).toBe(referenceCanonicalize({ p: value, q: [value] }));
      }),
      { numRuns: 20_000 },
    );
    for (let d = 1; d <= 7; d++) {
      for (let k = -3000; k <= 3000; k++) expect(canonicalize(k / 10 ** d)).toBe(String(k / 10 ** d));
    }
    for (const value of [
      1e-6,
      1e-7,
      5e-7,
      0.000001,
      0.0000015,
      2147483.647,
      2147483.648,
      214748364.7,
      0.1 + 0.2,
    ]) {
      expect(canonicalize(value)).toBe(String(value));
      expect(canonicalize(-value)).toBe(String(-value));
    }
  });

  it("keeps an outer write intact when toJSON or a getter derives a canonical form or a key of its own", () => {
    const inner = { b: "é", a: [1, "\ud83d\ude00"] };
    const value = {
      z: "ascii before",
      m: {
        toJSON: () => ({ nested: canonicalize(inner), key: idempotencyKey("t", "inner", inner) }),
      },
      get g() {
        return canonicalCall("t", "getter", { deep: "x".repeat(300) });
      },
      a: "after",
    };
    const expected = referenceCanonicalize(value);
    for (let i = 0; i < 3; i++) expect(canonicalize(value)).toBe(expected);
    expect(idempotencyKey("task", "tool", value)).toBe(
      sha256(referenceCanonicalize(["task", "tool", value])),
    ); // A proxy's traps run in the middle of the walk too, and may write a large form that grows the buffer.
    const proxy = new Proxy(
      { b: 2, a: 1 },
      { get: (_target, name) => `${canonicalize({ big: "ü".repeat(40_000) }).length}:${String(name)}` },
    );
    const outer = { y: "€", p: proxy, x: [proxy] };
    expect(canonicalize(outer)).toBe(referenceCanonicalize(outer));
  });

  it("starts clean after a write that threw, from a toJSON or from a fault deep inside", () => {
    const boom = new Error("boom");
    const throwing = {
      a: "x".repeat(100),
      b: {
        toJSON: () => {
          throw boom;
        },
      },
    };
    expect(() => canonicalize(throwing)).toThrow(boom);
    expect(canonicalize({ a: 1 })).toBe('{"a":1}');
    expect(outcome(() => canonicalize({ a: "€".repeat(50), b: [1, Number.NaN] }))).toEqual({
      error: "CanonicalizationError",
      path: "$.b[1]",
      reason: "NaN is not a JSON number",
    });
    expect(canonicalize(["plain"])).toBe('["plain"]');
    // A key whose writing failed inside a toJSON that itself derived a key.
    const nestedFailure = { t: { toJSON: () => idempotencyKey("t", "x", { bad: 10n }) } };
    expect(() => canonicalize(nestedFailure)).toThrow(CanonicalizationError);
    expect(canonicalize("ok")).toBe('"ok"');
  });

  it("grows past its first buffer for large values, and writes small ones correctly afterwards", () => {
    const large = {
      rows: Array.from({ length: 20_000 }, (_, i) => ({
        id: `row-${i}`,
        price: i / 100,
        note: "ü".repeat(i % 7),
      })),
    };
    expect(canonicalize(large)).toBe(referenceCanonicalize(large));
    const huge = "€".repeat(600_000); // 1.8 MB of UTF-8, past what the buffer keeps
    expect(canonicalize([huge])).toBe(JSON.stringify([huge]));
    expect(canonicalize({ b: 1, a: "ok" })).toBe('{"a":"ok","b":1}');
  });

  it("gives keys under a secret as HMAC of the same bytes", () => {
    const secret = "0123456789abcdef-secret";
    const args = { b: "ü", a: [1.5, -0, "\ud83d\ude00"] };
    const expected = createHmac("sha256", secret)
      .update(referenceCanonicalize(["task", "tool", args, 3]), "utf8")
      .digest("hex");
    expect(idempotencyKey("task", "tool", args, { secret, step: 3 })).toBe(expected);
  });
});
