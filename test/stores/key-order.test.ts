import { describe, expect, it } from "vitest";
import { compareKeys, firstAtOrAfter } from "../../src/store/range.js";

// The order every store lists keys in: UTF-8 bytes, as SQLite (BINARY), PostgreSQL (COLLATE "C") and Redis
// (ZRANGEBYLEX) compare. Buffer.compare of the encoded keys is the oracle.
const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const sign = (n: number) => Math.sign(n);

/** Well-formed strings mixing ASCII, U+0080..U+D7FF, U+E000..U+FFFF and characters beyond U+FFFF. */
function randomKey(random: () => number): string {
  const ranges = [
    [0x20, 0x7e],
    [0x80, 0xd7ff],
    [0xe000, 0xffff],
    [0x10000, 0x10ffff],
  ] as const;
  let key = "";
  const length = Math.floor(random() * 6);
  for (let i = 0; i < length; i++) {
    const [low, high] = ranges[Math.floor(random() * ranges.length)]!;
    key += String.fromCodePoint(low + Math.floor(random() * (high - low + 1)));
  }
  return key;
}

function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe("compareKeys", () => {
  it("orders as UTF-8 bytes do, where JavaScript's < does not (U+E000..U+FFFF against emoji)", () => {
    expect("\u{1F600}" < "\uE000").toBe(true);
    expect(compareKeys("\u{1F600}", "\uE000")).toBeGreaterThan(0);
    expect(compareKeys("a", "ab")).toBeLessThan(0);
    expect(compareKeys("ab", "ab")).toBe(0);
  });

  it("agrees with Buffer.compare on 20,000 random pairs, and sorts as it does", () => {
    const random = seeded(11);
    const keys: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const a = randomKey(random);
      // Half the pairs share a prefix, so that the first difference falls anywhere.
      const b =
        random() < 0.5
          ? a.slice(0, Math.floor(random() * (a.length + 1))) + randomKey(random)
          : randomKey(random);
      expect(sign(compareKeys(a, b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).toBe(sign(bytes(a, b)));
      keys.push(a);
    }
    expect([...keys].sort(compareKeys)).toEqual([...keys].sort(bytes));
  });

  it("bisects in the same order: firstAtOrAfter finds the first key not below the bound", () => {
    const keys = ["z", "\uE000", "\uFFFD", "\u{1F600}", "\u{10FFFF}"];
    expect(firstAtOrAfter(keys, "\uFFFE")).toBe(3);
    expect(firstAtOrAfter(keys, "\u{1F600}")).toBe(3);
    expect(firstAtOrAfter(keys, "a")).toBe(0);
    expect(firstAtOrAfter(keys, "{")).toBe(1);
    expect(firstAtOrAfter(keys, "\u{10FFFF}\u0000")).toBe(5);
  });
});
