import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CanonicalizationError } from "../../src/errors/index.js";
import { canonicalize } from "../../src/key/index.js";

// Every expectation below is typed in from RFC 8785 (checked against the RFC's XML source, cyberphone/ietf-json-canon
// xmlv3/rfc8785.xml) or read from the published cyberphone/json-canonicalization test data; none is produced by
// our own code.

describe("RFC 8785 section 3.2.2: serialization of primitive data types", () => {
  // The sample object of section 3.2.2, as JSON text (String.raw keeps its escapes for JSON.parse to decode).
  const sample = String.raw`{
    "numbers": [333333333.33333329, 1E30, 4.50,
                2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  }`;
  // Section 3.2.3 gives its canonical form (the RFC wraps the line for display only).
  const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;

  it("canonicalizes the sample as section 3.2.3 prints it", () => {
    expect(canonicalize(JSON.parse(sample))).toBe(expected);
  });

  it("produces the UTF-8 bytes listed in section 3.2.4", () => {
    const hex = `7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72
      75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a
      5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31
      65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37
      5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30
      30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d`.replace(/\s+/g, "");
    expect(Buffer.from(canonicalize(JSON.parse(sample)), "utf8").toString("hex")).toBe(hex);
  });

  it("writes the literals null, true and false as such (section 3.2.2.1)", () => {
    expect(canonicalize(null)).toBe("null");
    expect(canonicalize(true)).toBe("true");
    expect(canonicalize(false)).toBe("false");
  });

  it("escapes U+0000..U+001F as \\uhhhh in lowercase, except the five short forms (section 3.2.2.2)", () => {
    const short: Record<number, string> = { 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r" };
    for (let code = 0; code < 0x20; code++) {
      const written = short[code] ?? `\\u${code.toString(16).padStart(4, "0")}`;
      expect(canonicalize(String.fromCharCode(code))).toBe(`"${written}"`);
    }
    expect(canonicalize('"\\')).toBe(String.raw`"\"\\"`);
    // Everything else is written as is: DEL, C1 controls, U+2028/U+2029, "/", non-BMP characters.
    const asIs = "\u007f\u0080\u009f\u2028\u2029/\u20ac\ud83d\ude00\ufb33";
    expect(canonicalize(asIs)).toBe(`"${asIs}"`);
  });
});

describe("RFC 8785 section 3.2.3: sorting of object properties", () => {
  const sample = String.raw`{
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  }`;

  it("orders the members as the RFC's expected argument order", () => {
    const order = [
      "Carriage Return",
      "One",
      "Control",
      "Latin Small Letter O With Diaeresis",
      "Euro Sign",
      "Emoji: Grinning Face",
      "Hebrew Letter Dalet With Dagesh",
    ];
    // Read the order off the text: a parsed object would list the integer-like name "1" first whatever the text says.
    const text = canonicalize(JSON.parse(sample));
    const positions = order.map((value) => text.indexOf(`:"${value}"`));
    expect(positions.every((position) => position > 0)).toBe(true);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  it("writes the whole object in that order, unescaped beyond section 3.2.2.2", () => {
    expect(canonicalize(JSON.parse(sample))).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it('sorts "" < "a" < "aa" < "ab", the RFC\'s plain-English example', () => {
    expect(canonicalize({ ab: 4, aa: 3, a: 2, "": 1 })).toBe('{"":1,"a":2,"aa":3,"ab":4}');
  });

  it("sorts recursively, inside nested objects and objects in arrays, keeping array order", () => {
    expect(canonicalize({ b: [{ d: 1, c: 2 }, { f: { h: 1, g: 2 } }], a: 0 })).toBe(
      '{"a":0,"b":[{"c":2,"d":1},{"f":{"g":2,"h":1}}]}',
    );
  });
});

describe("RFC 8785 Appendix B: number serialization samples", () => {
  // [IEEE 754 bit pattern, JSON representation] exactly as in the RFC's table.
  const samples: [string, string][] = [
    ["0000000000000000", "0"], // Zero
    ["8000000000000000", "0"], // Minus zero
    ["0000000000000001", "5e-324"], // Min pos number
    ["8000000000000001", "-5e-324"], // Min neg number
    ["7fefffffffffffff", "1.7976931348623157e+308"], // Max pos number
    ["ffefffffffffffff", "-1.7976931348623157e+308"], // Max neg number
    ["4340000000000000", "9007199254740992"], // Max pos int
    ["c340000000000000", "-9007199254740992"], // Max neg int
    ["4430000000000000", "295147905179352830000"], // ~2**68
    ["44b52d02c7e14af5", "9.999999999999997e+22"],
    ["44b52d02c7e14af6", "1e+23"],
    ["44b52d02c7e14af7", "1.0000000000000001e+23"],
    ["444b1ae4d6e2ef4e", "999999999999999700000"],
    ["444b1ae4d6e2ef4f", "999999999999999900000"],
    ["444b1ae4d6e2ef50", "1e+21"],
    ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
    ["3eb0c6f7a0b5ed8d", "0.000001"],
    ["41b3de4355555553", "333333333.3333332"],
    ["41b3de4355555554", "333333333.33333325"],
    ["41b3de4355555555", "333333333.3333333"],
    ["41b3de4355555556", "333333333.3333334"],
    ["41b3de4355555557", "333333333.33333343"],
    ["becbf647612f3696", "-0.0000033333333333333333"],
    ["43143ff3c1cb0959", "1424953923781206.2"], // Round to even
  ];
  // The rows the RFC marks "Values out of range are not permitted in JSON".
  const outOfRange = ["7fffffffffffffff", "7ff0000000000000"]; // NaN, Infinity

  function double(hex: string): number {
    const view = new DataView(new ArrayBuffer(8));
    view.setBigUint64(0, BigInt(`0x${hex}`)); // big-endian, as the table writes the bits
    return view.getFloat64(0);
  }

  it("decodes the bit patterns it is given (the minus-zero row really is -0)", () => {
    expect(Object.is(double("8000000000000000"), -0)).toBe(true);
    expect(double("0000000000000001")).toBe(Number.MIN_VALUE);
    expect(double("7fefffffffffffff")).toBe(Number.MAX_VALUE);
  });

  it.each(samples)("%s serializes as %s", (hex, json) => {
    expect(canonicalize(double(hex))).toBe(json);
    expect(canonicalize([double(hex)])).toBe(`[${json}]`);
  });

  it.each(outOfRange)("%s (NaN or Infinity) is rejected", (hex) => {
    const value = double(hex);
    expect(Number.isFinite(value)).toBe(false);
    expect(() => canonicalize(value)).toThrow(CanonicalizationError);
    expect(() => canonicalize({ n: value })).toThrow(CanonicalizationError);
  });
});

describe("published JCS test vectors (cyberphone/json-canonicalization testdata)", () => {
  const dir = new URL("./jcs-vectors/", import.meta.url);
  const names = ["arrays", "french", "structures", "unicode", "values", "weird"];

  it("has every pair on disk and nothing unaccounted for", () => {
    const files = readdirSync(dir)
      .filter((file) => file.endsWith(".json") || file.endsWith(".txt"))
      .sort();
    expect(files).toEqual(names.flatMap((name) => [`${name}.json`, `${name}.txt`]).sort());
  });

  it.each(names)("%s", (name) => {
    const input = readFileSync(new URL(`${name}.json`, dir), "utf8");
    const output = readFileSync(new URL(`${name}.txt`, dir), "utf8");
    expect(canonicalize(JSON.parse(input))).toBe(output);
  });
});
