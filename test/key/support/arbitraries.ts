import fc from "fast-check";

// Values to compare two ways of writing the canonical form on: bad leaves, escaped and surrogate names, toJSON, shapes
// that recur (so that the shape cache misses, admits, then serves them).

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

export const { value } = fc.letrec<{ value: unknown; array: unknown[]; object: object }>((tie) => ({
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
export const batch = fc
  .array(value, { minLength: 1, maxLength: 4 })
  .map((values) => [...values, ...values, ...values]);
