import vm from "node:vm";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CanonicalizationError, IdemkeyError } from "../../src/errors/index.js";
import { canonicalCall, canonicalize, idempotencyKey } from "../../src/key/index.js";

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw, got a result");
}

/** Asserts a CanonicalizationError at exactly `path`, and returns it for further checks. */
function rejects(run: () => unknown, path: string, reason?: RegExp): CanonicalizationError {
  const error = thrown(run);
  expect(error).toBeInstanceOf(CanonicalizationError);
  expect(error).toBeInstanceOf(IdemkeyError);
  const typed = error as CanonicalizationError;
  expect(typed.name).toBe("CanonicalizationError");
  expect(typed.path).toBe(path);
  expect(typed.message.startsWith(`${path}: `)).toBe(true);
  if (reason) expect(typed.reason).toMatch(reason);
  return typed;
}

function nested(levels: number): unknown {
  let value: unknown = [];
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

describe("values JSON cannot say", () => {
  it.each([
    ["NaN", NaN, /NaN/],
    ["Infinity", Infinity, /Infinity/],
    ["-Infinity", -Infinity, /-Infinity/],
    ["a BigInt", 10n, /BigInt/],
    ["a function", () => 1, /function/],
    ["a symbol", Symbol("s"), /symbol/],
  ])("%s is rejected at the root, in an object and in an array", (_, value, reason) => {
    rejects(() => canonicalize(value), "$", reason);
    rejects(() => canonicalize({ ok: 1, bad: value }), "$.bad", reason);
    rejects(() => canonicalize({ items: [0, 1, 2, value] }), "$.items[3]", reason);
  });

  it("undefined is rejected at the root and in an array (in an object the member is omitted, below)", () => {
    rejects(() => canonicalize(undefined), "$", /undefined/);
    rejects(() => canonicalize({ items: [0, 1, 2, undefined] }), "$.items[3]", /undefined/);
  });

  it.each([
    ["a lone high surrogate", "ab\ud800c"],
    ["a lone low surrogate", "\udc00"],
    ["a high surrogate at the end", "x\ud83d"],
    ["a pair in the wrong order", "\ude00\ud83d"],
  ])("a string with %s is rejected", (_, text) => {
    rejects(() => canonicalize({ s: text }), "$.s", /lone surrogate/);
    rejects(() => canonicalize([text]), "$[0]", /lone surrogate/);
  });

  it("a member name with a lone surrogate is rejected, the path escaping it", () => {
    rejects(() => canonicalize({ "x\ud800": 1 }), '$["x\\ud800"]', /member name/);
    rejects(() => canonicalize({ a: { "\udc00": 1 } }), '$.a["\\udc00"]', /member name/);
  });

  it("a well-formed surrogate pair is accepted", () => {
    expect(canonicalize({ "\ud83d\ude00": "\ud83d\ude00" })).toBe('{"\ud83d\ude00":"\ud83d\ude00"}');
  });
});

describe("objects that are not plain data", () => {
  class Point {
    x = 1;
  }
  class Tuple extends Array<number> {}
  it.each([
    ["Map", new Map([["a", 1]]), /Map/],
    ["Set", new Set([1]), /Set/],
    ["WeakMap", new WeakMap(), /WeakMap/],
    ["WeakSet", new WeakSet(), /WeakSet/],
    ["Uint8Array", new Uint8Array([1, 2]), /typed array/],
    ["Float64Array", new Float64Array(1), /typed array/],
    ["BigInt64Array", new BigInt64Array(1), /typed array/],
    ["DataView", new DataView(new ArrayBuffer(2)), /DataView/],
    ["ArrayBuffer", new ArrayBuffer(2), /ArrayBuffer/],
    ["SharedArrayBuffer", new SharedArrayBuffer(2), /ArrayBuffer/],
    ["a class instance", new Point(), /Point/],
    ["an Error", new Error("x"), /Error/],
    ["an Array subclass", Tuple.from([1, 2]), /Array subclass/],
    ["a boxed number", new Number(1), /boxed primitive/],
    ["a boxed string", new String("s"), /boxed primitive/],
    ["a boxed boolean", new Boolean(false), /boxed primitive/],
    ["a boxed BigInt", Object(1n), /not JSON/],
    ["an object with a custom prototype", Object.create({ inherited: 1 }), /not JSON/],
  ])("%s is rejected", (_, value, reason) => {
    rejects(() => canonicalize(value), "$", reason);
    rejects(() => canonicalize({ list: [{ value }] }), "$.list[0].value", reason);
  });

  it("a hole in a sparse array is rejected at its index", () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point of the test
    rejects(() => canonicalize([1, , 3]), "$[1]", /hole/);
    rejects(() => canonicalize({ a: new Array(3) }), "$.a[0]", /hole/);
  });

  it("undefined inside an array is rejected (JSON.stringify would write null)", () => {
    rejects(() => canonicalize([1, 2, undefined]), "$[2]", /undefined/);
  });
});

describe("cycles", () => {
  it("an object that contains itself points at the reference back", () => {
    const self: Record<string, unknown> = { a: 1 };
    self.self = self;
    const error = rejects(() => canonicalize(self), "$.self", /cycle/);
    expect(error.reason).toContain("refers back to $");
  });

  it("an indirect cycle names the ancestor it returns to", () => {
    const root = { b: { c: {} as Record<string, unknown> } };
    root.b.c.back = root.b;
    const error = rejects(() => canonicalize(root), "$.b.c.back", /cycle/);
    expect(error.reason).toContain("refers back to $.b");
  });

  it("a cycle through arrays is found too, also with a small maxDepth", () => {
    const list: unknown[] = [0, { x: null }];
    (list[1] as Record<string, unknown>).x = list;
    rejects(() => canonicalize(list), "$[1].x", /cycle/);
    rejects(() => canonicalize({ list }, { maxDepth: 5 }), "$.list[1].x", /refers back to \$\.list/);
  });

  it("a shared reference that is not a cycle is written twice", () => {
    const shared = { x: 1 };
    expect(canonicalize({ a: shared, b: [shared, shared] })).toBe('{"a":{"x":1},"b":[{"x":1},{"x":1}]}');
  });
});

describe("what is accepted and how", () => {
  it("objects with toJSON (Date) are converted first, with the key JSON.stringify would pass", () => {
    expect(canonicalize({ at: new Date(Date.UTC(2020, 0, 2, 3, 4, 5, 6)) })).toBe(
      '{"at":"2020-01-02T03:04:05.006Z"}',
    );
    expect(canonicalize([new Date(Number.NaN)])).toBe("[null]"); // an invalid Date's toJSON returns null
    const echo = { toJSON: (key: string) => key };
    expect(canonicalize({ name: echo, list: [echo, echo] })).toBe('{"list":["0","1"],"name":"name"}');
    expect(canonicalize(echo)).toBe('""');
  });

  it("the result of toJSON is canonicalized and checked like any value", () => {
    expect(canonicalize({ v: { toJSON: () => ({ b: 1, a: [2] }) } })).toBe('{"v":{"a":[2],"b":1}}');
    rejects(() => canonicalize({ v: { toJSON: () => ({ x: Number.NaN }) } }), "$.v.x", /NaN/);
  });

  it("an object member whose value is undefined is omitted", () => {
    expect(canonicalize({ a: undefined, b: 1, c: undefined })).toBe('{"b":1}');
    expect(canonicalize({ a: undefined })).toBe("{}");
  });

  it("symbol-keyed and non-enumerable members are ignored, as JSON.stringify does", () => {
    const value = Object.defineProperty({ [Symbol("s")]: 1, a: 1 }, "hidden", {
      value: 2,
      enumerable: false,
    });
    expect(canonicalize(value)).toBe('{"a":1}');
  });

  it("null-prototype objects are plain objects", () => {
    const value = Object.assign(Object.create(null), { b: 2, a: { d: 4, c: 3 } });
    expect(canonicalize(value)).toBe('{"a":{"c":3,"d":4},"b":2}');
  });

  it("plain objects and arrays from another realm (a vm context) are plain data", () => {
    const foreign = vm.runInNewContext('({ b: 1, a: { d: [1, { f: "x", e: null }], c: true } })');
    expect(canonicalize(foreign)).toBe('{"a":{"c":true,"d":[1,{"e":null,"f":"x"}]},"b":1}');
    rejects(() => canonicalize(vm.runInNewContext("({ m: new Map() })")), "$.m", /Map/);
    const subclass = vm.runInNewContext("class Tuple extends Array {}; ({ t: Tuple.from([1]) })");
    rejects(() => canonicalize(subclass), "$.t", /Array subclass/);
  });

  it("a member named __proto__ (as JSON.parse makes it) is an ordinary member", () => {
    expect(canonicalize(JSON.parse('{"b":1,"__proto__":{"x":1},"a":2}'))).toBe(
      '{"__proto__":{"x":1},"a":2,"b":1}',
    );
  });
});

describe("depth", () => {
  it("10,000 levels of nested arrays throw CanonicalizationError under the default maxDepth of 1000", () => {
    rejects(() => canonicalize(nested(10_000)), `$${"[0]".repeat(1000)}`, /deeper than 1000 levels/);
  });

  it.each([
    [10_000, 20_000],
    [100_000, 1_000_000],
  ])(
    "%i levels with maxDepth %i give the output or a CanonicalizationError, never a RangeError",
    (levels, maxDepth) => {
      let output: string | undefined;
      try {
        output = canonicalize(nested(levels), { maxDepth });
      } catch (error) {
        expect(error).not.toBeInstanceOf(RangeError);
        expect(error).toBeInstanceOf(CanonicalizationError);
        expect((error as CanonicalizationError).reason).toMatch(/maxDepth/);
        return;
      }
      expect(output).toBe("[".repeat(levels + 1) + "]".repeat(levels + 1));
    },
  );

  it("maxDepth counts the arrays and objects that nest inside one another", () => {
    expect(canonicalize([[[1]]], { maxDepth: 3 })).toBe("[[[1]]]");
    rejects(() => canonicalize([[[[1]]]], { maxDepth: 3 }), "$[0][0][0]", /deeper than 3 levels/);
    expect(canonicalize({ a: { b: { c: 1 } } }, { maxDepth: 3 })).toBe('{"a":{"b":{"c":1}}}');
    rejects(() => canonicalize({ a: { b: { c: {} } } }, { maxDepth: 3 }), "$.a.b.c", /deeper than 3 levels/);
    expect(canonicalize(1, { maxDepth: 1 })).toBe("1");
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "10", null])(
    "maxDepth %s is a TypeError naming the option",
    (maxDepth) => {
      const options = { maxDepth: maxDepth as number };
      expect(() => canonicalize([], options)).toThrow(TypeError);
      expect(() => canonicalize([], options)).toThrow(/maxDepth/);
      expect(() => idempotencyKey("t", "tool", {}, options)).toThrow(/maxDepth/);
    },
  );
});

describe("paths", () => {
  it("name members by identifier where they can, and as JSON strings otherwise", () => {
    rejects(() => canonicalize({ $ok_1: NaN }), "$.$ok_1");
    rejects(() => canonicalize({ "a b": NaN }), '$["a b"]');
    rejects(() => canonicalize({ "1": NaN }), '$["1"]');
    rejects(() => canonicalize({ "": NaN }), '$[""]');
    rejects(() => canonicalize({ 'say "hi"': NaN }), '$["say \\"hi\\""]');
  });

  it("report the first fault in canonical order, not insertion order", () => {
    rejects(() => canonicalize({ b: NaN, a: Infinity }), "$.a", /Infinity/);
  });

  it("give the exact index in an array of length n", () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 300 })
          .chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 0, max: n - 1 }))),
        ([n, at]) => {
          const list: unknown[] = Array.from({ length: n }, (_, i) => ({ i }));
          list[at] = { "a b": [0, Number.NaN] };
          rejects(() => canonicalize(list), `$[${at}]["a b"][1]`);
          rejects(() => idempotencyKey("t", "tool", { list }), `$.args.list[${at}]["a b"][1]`);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("idempotencyKey and canonicalCall arguments", () => {
  const fns = [
    ["idempotencyKey", idempotencyKey],
    ["canonicalCall", canonicalCall],
  ] as const;

  it.each(fns)("%s: paths inside args start with $.args", (_, fn) => {
    rejects(() => fn("t", "tool", NaN), "$.args", /NaN/);
    rejects(() => fn("t", "tool", { items: [1, 2n] }), "$.args.items[1]", /BigInt/);
    const self: Record<string, unknown> = {};
    self.self = self;
    rejects(() => fn("t", "tool", self), "$.args.self", /cycle/);
    rejects(() => fn("t", "tool", nested(2000)), `$.args${"[0]".repeat(1000)}`, /maxDepth/);
  });

  it.each(fns)("%s: taskId and tool must be non-empty strings (TypeError)", (_, fn) => {
    for (const bad of ["", 1, null, undefined, {}, ["t"]]) {
      expect(() => fn(bad as string, "tool", {})).toThrow(TypeError);
      expect(() => fn(bad as string, "tool", {})).toThrow(/taskId/);
      expect(() => fn("t", bad as string, {})).toThrow(TypeError);
      expect(() => fn("t", bad as string, {})).toThrow(/tool/);
    }
  });

  it.each(fns)("%s: a lone surrogate in taskId or tool is a CanonicalizationError", (_, fn) => {
    rejects(() => fn("\ud800", "tool", {}), "$.taskId", /lone surrogate/);
    rejects(() => fn("t", "x\udc00", {}), "$.tool", /lone surrogate/);
  });

  it.each(fns)("%s: a step of the wrong type is a TypeError; a bad step value has path $.step", (_, fn) => {
    for (const step of [true, null, {}, [], 1n, Symbol("s")]) {
      expect(() => fn("t", "tool", {}, { step: step as unknown as string })).toThrow(TypeError);
      expect(() => fn("t", "tool", {}, { step: step as unknown as string })).toThrow(/step/);
    }
    rejects(() => fn("t", "tool", {}, { step: Number.NaN }), "$.step", /NaN/);
    rejects(() => fn("t", "tool", {}, { step: "\ud800" }), "$.step", /lone surrogate/);
  });
});
