import { describe, expect, it } from "vitest";
import { shapeOf, slotOf } from "../../src/key/shape-cache.js";

/** Name lists of one tool's arguments, unlike any other test's, so that the cache's other users do not interfere. */
function shape(i: number): string[] {
  return [`shape${i}_id`, `shape${i}_note`, `sku${i}`];
}

/** Two shapes of this test that land in the same slot. */
function collidingPair(): [string[], string[]] {
  const bySlot = new Map<number, string[]>();
  for (let i = 0; ; i++) {
    const names = shape(i);
    const slot = slotOf(names, names.length);
    const other = bySlot.get(slot);
    if (other) return [other, names];
    bySlot.set(slot, names);
  }
}

describe("the shape cache", () => {
  it("keeps two shapes that share a slot, sighted in turn (the 1 KB fixture's outer object and its address did)", () => {
    const [a, b] = collidingPair();
    expect(slotOf(a, a.length)).toBe(slotOf(b, b.length));
    const served: boolean[] = [];
    for (let round = 0; round < 4; round++) {
      for (const names of [a, b]) served.push(shapeOf(names.slice()) !== undefined);
    }
    // Missed on the first sighting of each, admitted on the second, served from then on.
    expect(served.slice(4)).toEqual([true, true, true, true]);
  });

  it("admits nothing from names new every call, so they evict no shape in use", () => {
    const kept = shape(-1);
    shapeOf(kept.slice());
    expect(shapeOf(kept.slice())).toBeDefined();
    for (let call = 0; call < 20_000; call++) {
      expect(shapeOf([`cus_${call}`, `cus_${call + 1}_x`])).toBeUndefined();
    }
    expect(shapeOf(kept.slice())).toBeDefined();
  });
});
