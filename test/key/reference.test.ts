import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalize } from "../../src/key/index.js";
import { batch } from "./support/arbitraries.js";
import { outcome } from "./support/outcome.js";
import { referenceCanonicalize } from "./support/reference-canonicalize.js";

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
