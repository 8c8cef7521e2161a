import { createHash } from "node:crypto";
import oracle from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalize, idempotencyKey } from "../../src/key/index.js";

type Json = null | boolean | number | string | Json[] | { [name: string]: Json };

/** Characters that trip serializers: every escape class, DEL and C1, line separators, surrogate pairs, combining marks. */
const tricky = fc.constantFrom(
  "\u0000",
  "\u0001",
  "\u001f",
  "\b",
  "\t",
  "\n",
  "\f",
  "\r",
  '"',
  "\\",
  "/",
  "\u007f",
  "\u0080",
  "\u2028",
  "\u2029",
  "\u00f6",
  "e\u0301",
  "\u20ac",
  "\ufb33",
  "\uffff",
  "\ud83d\ude00",
  "\u{10ffff}",
  "a",
  "0",
);

const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 8 }), // any code point, non-BMP included, never a lone surrogate
  fc.string({ unit: tricky, maxLength: 6 }),
  fc.string({ maxLength: 8 }),
);

/** Integer-like names are enumerated first by JavaScript, whatever their insertion order; sorting must not care. */
const memberName = fc.oneof(
  fc.constantFrom("2", "10", "0", "01", "1", "-1", "1.5", "4294967295", "", "a", "A", "__proto__", "toJSON"),
  text,
);

const number = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }), // includes -0, subnormals and the extremes
  fc.integer(),
  fc.constantFrom(
    -0,
    5e-324,
    -5e-324,
    Number.MAX_VALUE,
    -Number.MAX_VALUE,
    Number.MAX_SAFE_INTEGER,
    2 ** 53,
    1e21,
    1e20,
    1e-6,
    1e-7,
    0.1 + 0.2,
    333333333.3333333,
  ),
);

const leaf = fc.oneof(fc.constant(null), fc.boolean(), number, text);

/** Builds an object with data properties only, so that a member named "__proto__" is an own member, as in JSON.parse. */
function objectOf(entries: [string, Json][], nullPrototype: boolean): { [name: string]: Json } {
  const object = nullPrototype ? Object.create(null) : {};
  for (const [name, value] of entries) {
    Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return object;
}

const { json } = fc.letrec<{ json: Json; array: Json[]; object: { [name: string]: Json } }>((tie) => ({
  json: fc.oneof({ depthSize: "small", maxDepth: 5 }, leaf, tie("array"), tie("object")),
  array: fc.array(tie("json"), { maxLength: 5 }),
  object: fc
    .tuple(
      fc.uniqueArray(fc.tuple(memberName, tie("json")), { selector: ([name]) => name, maxLength: 6 }),
      fc.boolean(),
    )
    .map(([entries, nullPrototype]) => objectOf(entries, nullPrototype)),
}));

/** Structural equality of JSON values, with -0 equal to 0 (=== on numbers), compared on own members only. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((element, i) => jsonEqual(element, b[i]));
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const names = Object.keys(x);
  if (names.length !== Object.keys(y).length) return false;
  return names.every((name) => Object.hasOwn(y, name) && jsonEqual(x[name], y[name]));
}

/** A deterministic generator (mulberry32), so a failing shuffle replays from fast-check's seed. */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A deep copy whose members are inserted in a shuffled order, at every level. */
function reorder(value: unknown, random: () => number): unknown {
  if (Array.isArray(value)) return value.map((element) => reorder(element, random));
  if (typeof value !== "object" || value === null) return value;
  const names = Object.keys(value);
  for (let i = names.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [names[i], names[j]] = [names[j]!, names[i]!];
  }
  const source = value as Record<string, unknown>;
  return objectOf(
    names.map((name) => [name, reorder(source[name], random) as Json]),
    Object.getPrototypeOf(value) === null,
  );
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

describe("canonical form properties", () => {
  it("the shuffling helper really changes insertion order", () => {
    const value = { a: 1, b: 2, c: 3, d: 4, e: 5, f: { g: 1, h: 2, i: 3 } };
    const orders = new Set<string>();
    for (let seed = 0; seed < 20; seed++) orders.add(JSON.stringify(reorder(value, randomFrom(seed))));
    expect(orders.size).toBeGreaterThan(10);
  });

  it("does not depend on member insertion order, at any depth", () => {
    fc.assert(
      fc.property(json, fc.integer(), (value, seed) => {
        expect(canonicalize(reorder(value, randomFrom(seed)))).toBe(canonicalize(value));
      }),
      { numRuns: 2000 },
    );
  });

  it("parses back to the same value (-0 becomes 0) and is a fixed point", () => {
    fc.assert(
      fc.property(json, (value) => {
        const canonical = canonicalize(value);
        const parsed = JSON.parse(canonical);
        expect(jsonEqual(parsed, value)).toBe(true);
        expect(canonicalize(parsed)).toBe(canonical);
      }),
      { numRuns: 2000 },
    );
  });

  it("agrees with the canonicalize package (an independent RFC 8785 implementation) on 10,000 values", () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(canonicalize(value)).toBe(oracle(value));
      }),
      { numRuns: 10_000 },
    );
  });

  it("gives distinct JSON values distinct forms, and equal values one form", () => {
    // A small domain, so that equal pairs (including 0 and -0, and reordered members) come up often.
    const small = fc.letrec<{ v: Json }>((tie) => ({
      v: fc.oneof(
        { depthSize: "small", maxDepth: 3 },
        fc.constantFrom<Json>(0, -0, 1, "0", "1", "", "a", null, true, false),
        fc.array(tie("v"), { maxLength: 2 }),
        fc
          .uniqueArray(fc.tuple(fc.constantFrom("a", "b", "0", "1"), tie("v")), {
            selector: ([name]) => name,
            maxLength: 2,
          })
          .map((entries) => objectOf(entries, false)),
      ),
    })).v;
    let equalPairs = 0;
    let distinctPairs = 0;
    fc.assert(
      fc.property(fc.oneof(fc.tuple(small, small), fc.tuple(json, json)), ([a, b]) => {
        const same = jsonEqual(a, b);
        if (same) equalPairs++;
        else distinctPairs++;
        expect(canonicalize(a) === canonicalize(b)).toBe(same);
      }),
      { numRuns: 5000 },
    );
    // The property says nothing unless both sides of the equivalence were exercised.
    expect(equalPairs).toBeGreaterThan(100);
    expect(distinctPairs).toBeGreaterThan(1000);
  });
});

describe("idempotency key properties", () => {
  const name = fc.string({ unit: "binary", minLength: 1, maxLength: 12 });

  it("is the SHA-256 of the oracle's canonical [taskId, tool, args], and ignores member order", () => {
    fc.assert(
      fc.property(name, name, json, fc.integer(), (taskId, tool, args, seed) => {
        const key = idempotencyKey(taskId, tool, args);
        expect(key).toBe(sha256(oracle([taskId, tool, args])!));
        expect(idempotencyKey(taskId, tool, reorder(args, randomFrom(seed)))).toBe(key);
      }),
      { numRuns: 2000 },
    );
  });

  it("hashes [taskId, tool, args, step] with a step, which always changes the key", () => {
    const step = fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
    );
    fc.assert(
      fc.property(name, name, json, step, (taskId, tool, args, step) => {
        const key = idempotencyKey(taskId, tool, args, { step });
        expect(key).toBe(sha256(oracle([taskId, tool, args, step])!));
        expect(key).not.toBe(idempotencyKey(taskId, tool, args));
      }),
      { numRuns: 1000 },
    );
    expect(idempotencyKey("t", "tool", {}, { step: 1 })).not.toBe(
      idempotencyKey("t", "tool", {}, { step: "1" }),
    );
  });

  it('keeps ("a", "bc") apart from ("ab", "c")', () => {
    expect(idempotencyKey("a", "bc", {})).not.toBe(idempotencyKey("ab", "c", {}));
    // Every way of splitting one string into taskId and tool gives its own key.
    fc.assert(
      fc.property(fc.string({ unit: "binary", minLength: 2, maxLength: 10 }), json, (joined, args) => {
        const points = [...joined]; // split between code points, never inside a surrogate pair
        const keys = new Set<string>();
        for (let i = 1; i < points.length; i++) {
          keys.add(idempotencyKey(points.slice(0, i).join(""), points.slice(i).join(""), args));
        }
        expect(keys.size).toBe(points.length - 1);
      }),
      { numRuns: 500 },
    );
  });
});
