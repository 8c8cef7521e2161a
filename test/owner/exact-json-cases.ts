import fc from "fast-check";
import { exactJsonText, exactJsonValue, MAX_DEPTH, NOT_JSON } from "../../src/owner/exact-json.js";

/**
 * The inputs of the exact-JSON fixture (test/fixtures/exact-json.json) and how an output is written in it. The
 * fixture holds each input with the output exact-json.ts gave it when the fixture was made, so that a rewrite which
 * changes one fingerprint fails; `npx tsx test/owner/exact-json-cases.ts` writes it again (only on purpose).
 */

/** An output as the fixture writes it: the form, or `{ refused, path }`, `{ notJson }`, `{ notAValue }`. */
export type Written = string | { refused: string; path: string } | { notJson: true } | { notAValue: true };

export function writtenText(text: string): Written {
  const out = exactJsonText(text);
  if (out === NOT_JSON) return { notJson: true };
  return typeof out === "string" ? out : { refused: out.refused, path: out.path };
}

export function writtenValue(value: unknown): Written {
  const out = exactJsonValue(value);
  if (out === undefined) return { notAValue: true };
  return typeof out === "string" ? out : { refused: out.refused, path: out.path };
}

const space = fc.constantFrom("", "", "", " ", "\n", "\t", " \r\n ");
const digits = (min: number, max: number) =>
  fc.array(fc.constantFrom(..."0123456789"), { minLength: min, maxLength: max }).map((d) => d.join(""));

/** Number tokens of every shape the grammar allows, with zeros where they make exactness hard, and a few it does not. */
const numberText = fc.oneof(
  {
    weight: 20,
    arbitrary: fc
      .tuple(
        fc.constantFrom("", "", "-"),
        fc.oneof(
          fc.constant("0"),
          fc.tuple(fc.constantFrom(..."123456789"), digits(0, 25)).map(([a, b]) => a + b),
        ),
        fc.option(digits(1, 12), { nil: undefined }),
        fc.option(
          fc.tuple(
            fc.constantFrom("e", "E"),
            fc.constantFrom("", "+", "-"),
            fc.oneof(digits(1, 3), digits(17, 22)),
          ),
          { nil: undefined },
        ),
      )
      .map(([sign, whole, fraction, exponent]) =>
        [
          sign,
          whole,
          fraction === undefined ? "" : `.${fraction}`,
          exponent === undefined ? "" : exponent.join(""),
        ].join(""),
      ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom("01", "1.", ".5", "+1", "1e", "--1", "0x10", "1.5e+-3", "NaN", "Infinity"),
  },
);

/** String tokens: plain, escaped every way, with lone surrogates written as escapes, names for JSON Pointers. */
const stringText = fc
  .array(
    fc.oneof(
      { weight: 30, arbitrary: fc.constantFrom("a", "b", "z", "é", "☎", "😀", "~", "/", "~1", " ", "A") },
      {
        weight: 10,
        arbitrary: fc.constantFrom(
          "\\n",
          "\\t",
          '\\"',
          "\\\\",
          "\\/",
          "\\u0001",
          "\\u00e9",
          "\\u2028",
          "\\ud83d\\ude00",
        ),
      },
      { weight: 1, arbitrary: fc.constantFrom("\\ud800", "\\udfff", "\\uDC00x", "\u0001", "\\x") },
    ),
    { maxLength: 6 },
  )
  .map((parts) => `"${parts.join("")}"`);

/** Member names from a small pool, so that duplicates (spelled alike or through escapes) come up. */
const nameText = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      '"a"',
      '"b"',
      '"\\u0061"',
      '"A"',
      '"é"',
      '"\\u00e9"',
      '"a/b"',
      '"~0"',
      '""',
      '"😀"',
      '"\\ufffd"',
    ),
  },
  { weight: 1, arbitrary: stringText },
);

const { value } = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    numberText,
    stringText,
    fc.constantFrom("true", "false", "null"),
    fc
      .tuple(fc.array(fc.tuple(space, tie("value"), space), { maxLength: 5 }), space)
      .map(([items, s]) => `[${s}${items.map(([a, v, b]) => `${a}${v}${b}`).join(",")}]`),
    fc
      .tuple(fc.array(fc.tuple(space, nameText, space, tie("value")), { maxLength: 5 }), space)
      .map(([members, s]) => `{${s}${members.map(([a, n, b, v]) => `${a}${n}${b}:${v}`).join(",")}}`),
  ),
}));

const deep = (n: number, open: string, close: string) => `${open.repeat(n)}1${close.repeat(n)}`;

/** The texts of the fixture: generated from a fixed seed, a few cut short or spoilt, and the depth limit's edges. */
export function textCases(): string[] {
  const generated = fc.sample(
    fc.tuple(space, value, space, fc.nat(40)).map(([a, v, b, cut]) =>
      // One in ten is cut short (a syntax error, mostly), one in forty gets a trailing comma or junk.
      cut % 10 === 0
        ? `${a}${v}${b}`.slice(0, Math.max(1, v.length - 1))
        : cut === 1
          ? `${a}${v},`
          : `${a}${v}${b}`,
    ),
    { seed: 44, numRuns: 600 },
  );
  return [
    ...generated,
    deep(MAX_DEPTH, "[", "]"),
    deep(MAX_DEPTH + 1, "[", "]"),
    `${'{"x":'.repeat(MAX_DEPTH)}1${"}".repeat(MAX_DEPTH)}`,
    `${'{"x":'.repeat(MAX_DEPTH + 1)}1${"}".repeat(MAX_DEPTH + 1)}`,
    "",
    " ",
    "\ufeff{}",
    '{"a":1}garbage',
  ];
}

/** The values of the fixture: what `JSON.parse` made of the valid texts (labelled with the text), then `special`. */
export function valueCases(texts: readonly string[]): { label: string; value: unknown }[] {
  const parsed = texts.flatMap((text) => {
    try {
      return [{ label: text, value: JSON.parse(text) as unknown }];
    } catch {
      return [];
    }
  });
  return [...parsed, ...specialValues()];
}

/** What only a value can be, or what `JSON.parse` would not make. */
export function specialValues(): { label: string; value: unknown }[] {
  let tooDeep: unknown = 1;
  for (let i = 0; i <= MAX_DEPTH; i++) tooDeep = [tooDeep];
  return [
    { label: "-0", value: -0 },
    {
      label: "[-0, 1e21, 5e-324, 0.1, 1.7976931348623157e308]",
      value: [-0, 1e21, 5e-324, 0.1, Number.MAX_VALUE],
    },
    { label: "{a: undefined, b: 1}", value: { a: undefined, b: 1 } },
    { label: "[undefined]", value: [undefined] },
    { label: "NaN", value: Number.NaN },
    { label: "{a: Infinity}", value: { a: Number.POSITIVE_INFINITY } },
    { label: "a Date", value: new Date(0) },
    {
      label: "a null-prototype object",
      value: Object.assign(Object.create(null) as object, { b: 2, a: [1] }),
    },
    { label: "a lone surrogate at /x~1y/0", value: { "x/y": ["\ud800"] } },
    { label: "a lone surrogate in a name", value: { "a~\udc00": 1 } },
    { label: `${MAX_DEPTH + 1} nested arrays`, value: tooDeep },
    { label: "a bigint", value: { n: 1n } },
  ];
}

if (process.argv[1]?.endsWith("exact-json-cases.ts")) {
  const { writeFileSync } = await import("node:fs");
  const fixture = {
    note: "Inputs and the exact forms exact-json.ts gave them (test/owner/exact-json-cases.ts writes this).",
    texts: textCases().map((text) => [text, writtenText(text)]),
    values: valueCases(textCases()).map(({ label, value }) => [label, writtenValue(value)]),
  };
  writeFileSync(
    new URL("../fixtures/exact-json.json", import.meta.url),
    `${JSON.stringify(fixture, null, 1)}\n`,
  );
}
