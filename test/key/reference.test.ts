import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalize } from "../../src/key/index.js";
import { outcome } from "./support/outcome.js";
import { referenceCanonicalize } from "./support/reference-canonicalize.js";

/**
 * Names drawn from small pools, so that the same shapes come back across values and within one value (the cache
 * admits a shape on its second sighting, so the third one is served from it), plus names that need an escape or
 * carry a lone surrogate, which must stay on the uncached path.
 */
const memberName = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom("a", "b", "sku", "quantity", "tags", "id", "Z", "é", "€", "10", "2"),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom("toJSON", "__proto__", "", 'q"uote', "line\n", "\ud800", "x\udc00", "😀"),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 4 }) },
);

class Point {
  x = 1;
}

const bad = fc.constantFrom<() => unknown>(
  () => Number.NaN,
  () => Number.POSITIVE_INFINITY,
  () => undefined,
  () => 10n,
  () => () => 1,
  () => Symbol("s"),
  () => "lone \ud83d",
  () => new Map([[1, 2]]),
  () => new Set([1]),
  () => new Uint8Array(2),
  () => new Point(),
  () => new Date(0),
  () => ({ toJSON: () => ({ b: 1, a: 2 }) }),
  () => ({ toJSON: "not a function", a: 1 }),
  () => Object.assign([1, 2], { toJSON: () => "array with toJSON" }),
  () => {
    const sparse = [1, 2, 3];
    delete sparse[1];
    return sparse;
  },
  () => [undefined],
  () => new String("boxed"),
);

const leaf = fc.oneof(
  { weight: 8, arbitrary: fc.oneof(fc.constant(null), fc.boolean(), fc.double(), fc.integer(), fc.string()) },
  { weight: 1, arbitrary: bad.map((make) => make()) },
);

const { value } = fc.letrec<{ value: unknown; array: unknown[]; object: object }>((tie) => ({
  value: fc.oneof({ depthSize: "small", maxDepth: 5 }, leaf, tie("array"), tie("object"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 4 }),
  object: fc
    .tuple(
      fc.uniqueArray(fc.tuple(memberName, tie("value")), { selector: ([n]) => n, maxLength: 5 }),
      fc.boolean(),
    )
    .map(([entries, nullPrototype]) => {
      const object = nullPrototype ? Object.create(null) : {};
      for (const [name, member] of entries) {
        Object.defineProperty(object, name, {
          value: member,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return object;
    }),
}));

/** Several values, a few of them repeated, so that shapes are first missed, then admitted, then served cached. */
const batch = fc
  .array(value, { minLength: 1, maxLength: 4 })
  .map((values) => [...values, ...values, ...values]);

describe("the serializer agrees with the 0.1 reference (texts and errors)", () => {
  it("on 3,000 values (in batches, each seen thrice) with bad leaves, escaped and surrogate names, toJSON and recurring shapes", () => {
    fc.assert(
      fc.property(batch, fc.integer({ min: 1, max: 8 }), (values, maxDepth) => {
        for (const v of values) {
          expect(outcome(() => canonicalize(v, { maxDepth }))).toEqual(
            outcome(() => referenceCanonicalize(v, { maxDepth })),
          );
          expect(outcome(() => canonicalize(v))).toEqual(outcome(() => referenceCanonicalize(v)));
        }
      }),
      { numRuns: 250 },
    );
  });

  it("on one shape seen many times with values that change, omitted members included", () => {
    const row = fc.record({
      quantity: fc.oneof(fc.integer(), fc.constant(undefined), fc.constant(Number.NaN)),
      sku: fc.oneof(fc.string(), fc.constant("bad \udfff")),
      tags: fc.array(fc.string(), { maxLength: 2 }),
    });
    fc.assert(
      fc.property(fc.array(row, { maxLength: 12 }), (rows) => {
        expect(outcome(() => canonicalize({ rows }))).toEqual(outcome(() => referenceCanonicalize({ rows })));
      }),
      { numRuns: 250 },
    );
  });

  it("on names new every call (more shapes than the cache holds)", () => {
    for (let call = 0; call < 3000; call++) {
      const value = Object.fromEntries(
        Array.from({ length: 4 }, (_, i) => [`id_${(call * 4 + i) * 7919}`, { b: call, a: [i] }]),
      );
      expect(canonicalize(value)).toBe(referenceCanonicalize(value));
    }
  });

  it("honours a toJSON someone put on Object.prototype or Array.prototype, as JSON.stringify does", () => {
    const value = { b: { d: 1, c: 2 }, a: [1, 2] };
    for (let i = 0; i < 3; i++) canonicalize(value); // the shapes are cached now
    for (const proto of [Object.prototype, Array.prototype] as Record<string, unknown>[]) {
      proto.toJSON = () => "polluted";
      try {
        expect(canonicalize(value)).toBe(referenceCanonicalize(value));
      } finally {
        delete proto.toJSON;
      }
    }
    expect(canonicalize(value)).toBe('{"a":[1,2],"b":{"c":2,"d":1}}');
  });

  it("reports cycles and depth at the same path once shapes are cached", () => {
    const cyclic: Record<string, unknown> = { b: 1, a: { d: [1], c: null } };
    (cyclic.a as Record<string, unknown>).c = cyclic;
    for (let i = 0; i < 3; i++) {
      expect(outcome(() => canonicalize(cyclic))).toEqual(outcome(() => referenceCanonicalize(cyclic)));
      expect(outcome(() => canonicalize(cyclic, { maxDepth: 2 }))).toEqual(
        outcome(() => referenceCanonicalize(cyclic, { maxDepth: 2 })),
      );
    }
  });
});
