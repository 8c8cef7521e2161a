#!/usr/bin/env node
// Writes test-vectors/keys.json: idempotency-key cases for other languages' implementations to check against.
//
// Deliberately independent of src/: the canonical form comes from the `canonicalize` package (an RFC 8785
// implementation we do not maintain) and the hash from node:crypto, so the vectors test our code instead of
// echoing it. Run it again only when adding cases; an existing case's expected values must never change.
//
//   node scripts/make-test-vectors.mjs
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import canonicalize from "canonicalize";

const cases = [
  {
    description: "a typical call: the README example",
    taskId: "task-8812",
    tool: "openPullRequest",
    args: { repo: "acme/api", head: "fix-42", base: "main", title: "Fix #42" },
  },
  {
    description: "the same call with members inserted in another order: the same key",
    taskId: "task-8812",
    tool: "openPullRequest",
    args: { title: "Fix #42", base: "main", head: "fix-42", repo: "acme/api" },
  },
  {
    description: "nested members out of order at every level",
    taskId: "task-1",
    tool: "createInvoice",
    args: {
      lines: [
        { qty: 2, sku: "B-2", price: { currency: "EUR", amount: 1250 } },
        { sku: "A-1", qty: 1, price: { amount: 300, currency: "EUR" } },
      ],
      customer: { name: "Ada", id: "c_1", address: { zip: "75001", city: "Paris" } },
    },
  },
  {
    description: "integer-like member names sort as strings by UTF-16 code units: 0, 01, 1, 10, 2",
    taskId: "task-1",
    tool: "setSlots",
    args: {
      2: "two",
      10: "ten",
      1: "one",
      "01": "zero-one",
      0: "zero",
      "-1": "minus one",
      1.5: "one and a half",
    },
  },
  {
    description: "names that differ only in case, and the empty name: by code unit, uppercase first",
    taskId: "task-1",
    tool: "tag",
    args: { b: 1, B: 2, a: 3, A: 4, "": 5, _: 6, $: 7, "~": 8 },
  },
  {
    description:
      "RFC 8785 section 3.2.3 names: a character outside the BMP sorts by its high surrogate (before U+FB33)",
    taskId: "task-1",
    tool: "sortTest",
    args: {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      1: "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis",
    },
  },
  {
    description: "characters outside the BMP in names and values are written as UTF-8, never escaped",
    taskId: "task-\u{1f680}",
    tool: "sendMessage",
    args: { text: "ship it \u{1f680}\u{1f389}", "\u{1d11e}": "G clef", cjk: "\u{20bb7}\u91ce\u5bb6" },
  },
  {
    description:
      'string escapes: control characters as \\uhhhh in lowercase or \\b \\t \\n \\f \\r, only " and \\ otherwise',
    taskId: "task-1",
    tool: "writeFile",
    args: {
      content:
        'line 1\nline 2\r\n\ttab\bback\fform\u0000nul\u0001\u001f\u007fdel "quoted" back\\slash /slash',
      separators: "\u2028\u2029",
    },
  },
  {
    description: "Unicode is not normalized: precomposed and decomposed forms give different keys (1 of 2)",
    taskId: "task-1",
    tool: "rename",
    args: { name: "caf\u00e9" },
  },
  {
    description: "Unicode is not normalized: precomposed and decomposed forms give different keys (2 of 2)",
    taskId: "task-1",
    tool: "rename",
    args: { name: "cafe\u0301" },
  },
  {
    description:
      "numbers as ECMAScript prints them: exponent from 1e21 up and below 1e-6, trailing zeros dropped",
    taskId: "task-1",
    tool: "record",
    args: {
      big: 1e21,
      belowBig: 1e20,
      small: 1e-7,
      aboveSmall: 0.000001,
      decimal: 4.5,
      negative: -12.75,
      huge: 1.7976931348623157e308,
      tiny: 5e-324,
      maxSafe: 9007199254740991,
      twoTo53: 9007199254740992,
      thirds: 333333333.3333333,
    },
  },
  {
    description: "-0 is written as 0 (args hold -0 when generated; JSON cannot write it, so it reads 0 here)",
    taskId: "task-1",
    tool: "adjust",
    args: { delta: -0, list: [-0, 0] },
  },
  {
    description: "0.1 + 0.2 keeps its full shortest round-trip form",
    taskId: "task-1",
    tool: "charge",
    args: { amount: 0.1 + 0.2, expected: 0.3 },
  },
  {
    description: "literals and an empty string",
    taskId: "task-1",
    tool: "flags",
    args: { yes: true, no: false, none: null, empty: "" },
  },
  {
    description: "arrays keep their order; objects inside them are sorted",
    taskId: "task-1",
    tool: "batch",
    args: [{ b: 1, a: 2 }, [3, 2, 1], "z", "a", [{ y: [], x: {} }]],
  },
  {
    description: "empty args object",
    taskId: "task-1",
    tool: "ping",
    args: {},
  },
  {
    description: "empty args array",
    taskId: "task-1",
    tool: "ping",
    args: [],
  },
  {
    description: "empty arrays and objects nested",
    taskId: "task-1",
    tool: "configure",
    args: { a: [], b: {}, c: [[], {}, [[]], { d: {} }] },
  },
  {
    description: "args that are not an object: a string",
    taskId: "task-1",
    tool: "search",
    args: "idempotency keys",
  },
  {
    description: "args null",
    taskId: "task-1",
    tool: "refresh",
    args: null,
  },
  {
    description: "the split between taskId and tool matters (1 of 2): taskId a, tool bc",
    taskId: "a",
    tool: "bc",
    args: {},
  },
  {
    description: "the split between taskId and tool matters (2 of 2): taskId ab, tool c",
    taskId: "ab",
    tool: "c",
    args: {},
  },
  {
    description: "step as a number: [taskId, tool, args, step]",
    taskId: "task-1",
    tool: "sendEmail",
    args: { to: "ada@example.com", body: "Welcome" },
    step: 1,
  },
  {
    description: "step as a string",
    taskId: "task-1",
    tool: "sendEmail",
    args: { to: "ada@example.com", body: "Welcome" },
    step: "welcome-email",
  },
  {
    description: 'step "1" (a string) differs from step 1 (a number)',
    taskId: "task-1",
    tool: "sendEmail",
    args: { to: "ada@example.com", body: "Welcome" },
    step: "1",
  },
  {
    description: "step 0 is a step: it differs from no step",
    taskId: "task-1",
    tool: "sendEmail",
    args: { to: "ada@example.com", body: "Welcome" },
    step: 0,
  },
  {
    description: "no step, for comparison with the step cases",
    taskId: "task-1",
    tool: "sendEmail",
    args: { to: "ada@example.com", body: "Welcome" },
  },
];

const vectors = cases.map(({ description, taskId, tool, args, step }) => {
  const call = step === undefined ? [taskId, tool, args] : [taskId, tool, args, step];
  const canonical = canonicalize(call);
  const key = createHash("sha256").update(canonical, "utf8").digest("hex");
  return { description, taskId, tool, args, ...(step === undefined ? {} : { step }), canonical, key };
});

const target = new URL("../test-vectors/keys.json", import.meta.url);
writeFileSync(target, `${JSON.stringify(vectors, null, 2)}\n`);
console.log(`wrote ${vectors.length} cases to ${target.pathname}`);
