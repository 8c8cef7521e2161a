import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { exactJsonText, exactJsonValue } from "../../src/owner/exact-json.js";
import { specialValues, type Written, writtenText, writtenValue } from "./exact-json-cases.js";

const fixture = JSON.parse(readFileSync(new URL("../fixtures/exact-json.json", import.meta.url), "utf8")) as {
  texts: [string, Written][];
  values: [string, Written][];
};

/**
 * An independent writer of the exact form for what `JSON.parse` makes of JSON without duplicate names or lone
 * surrogates: a double's shortest decimal (what `String` gives) with its zeros moved into the exponent.
 */
function oracle(value: unknown): string {
  if (value === null || typeof value === "boolean") return String(value);
  if (typeof value === "number") {
    if (value === 0) return "0";
    const [mantissa = "", exponent = "0"] = String(Math.abs(value)).split("e");
    const [whole = "", fraction = ""] = mantissa.split(".");
    const all = `${whole}${fraction}`.replace(/^0+/, "");
    const significant = all.replace(/0+$/, "");
    const e = Number(exponent) - fraction.length + (all.length - significant.length);
    return `${value < 0 ? "-" : ""}${significant}e${e}`;
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(oracle).join(",")}]`;
  const names = Object.keys(value as object).sort();
  return `{${names.map((name) => `${JSON.stringify(name)}:${oracle((value as Record<string, unknown>)[name])}`).join(",")}}`;
}

describe("the exact JSON form", () => {
  it("gives every text of the fixture the form or refusal it had when the fixture was made", () => {
    expect(fixture.texts.length).toBeGreaterThan(500);
    const differing = fixture.texts.filter(
      ([text, written]) => JSON.stringify(writtenText(text)) !== JSON.stringify(written),
    );
    expect(differing).toEqual([]);
  });

  it("gives every value of the fixture the form or refusal it had when the fixture was made", () => {
    const special = new Map(specialValues().map(({ label, value }) => [label, value]));
    expect(fixture.values.length).toBeGreaterThan(400);
    const differing = fixture.values.filter(([label, written]) => {
      const value = special.has(label) ? special.get(label) : JSON.parse(label);
      return JSON.stringify(writtenValue(value)) !== JSON.stringify(written);
    });
    expect(differing).toEqual([]);
  });

  it("agrees with an independent writer on any JSON value, from its text in any layout and from the value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(undefined, 1, "\t", " \n"), (value, indent) => {
        // Through the text, as JSON.stringify writes it: the value `-0` becomes `0` on the way.
        const parsed = JSON.parse(JSON.stringify(value)) as unknown;
        const expected = oracle(parsed);
        expect(exactJsonText(JSON.stringify(value, null, indent))).toBe(expected);
        expect(exactJsonValue(parsed)).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it("writes one form for a number however its text spells it", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (n) => {
        const expected = oracle(n);
        const shortest = String(n);
        const spellings = [shortest, n.toExponential(), `${shortest}e0`, `${shortest}E-00`, `${shortest}000`];
        for (const spelling of spellings) {
          // `${shortest}000` is another number unless there is a fraction; `1e+21e0` is not a number.
          if (spelling === `${shortest}000` && !/^[^e]*\.[^e]*$/.test(shortest)) continue;
          if (!/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(spelling)) continue;
          expect(exactJsonText(spelling)).toBe(expected);
        }
      }),
      { numRuns: 500 },
    );
  });
});
