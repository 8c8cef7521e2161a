import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeData, encodeData, newCall } from "../../src/harness/ledger.js";
import type { LedgerCall } from "../../src/harness/record/types.js";
import { Effect } from "../../src/harness/types.js";
import { canonicalize } from "../../src/key/canonicalize.js";

// The record's bytes as the encoders wrote them with one JSON.stringify of the whole object, before a new call's
// text was spliced from a cached head: the fast path must write exactly these bytes, in both formats.
function referenceV1(call: LedgerCall): string {
  const { taskId, tool, effect, step, argsHash, args, events, extra } = call;
  const data: Record<string, unknown> = { v: 1, taskId, tool, effect, argsHash, args: args.text(), events };
  if (step !== undefined) data.step = step;
  return JSON.stringify(extra === undefined ? data : { ...data, ...extra });
}

function referenceV2(call: LedgerCall): string {
  const { taskId, tool, effect, step, argsHash, events, extra } = call;
  const head = JSON.stringify({
    v: 2,
    taskId,
    tool,
    effect,
    ...(step === undefined ? {} : { step }),
    argsHash,
    events,
    ...extra,
  });
  return `${head.slice(0, -1)},"args":${call.args.text()}}`;
}

const text = fc.oneof(
  fc.string({ minLength: 1 }),
  fc.string({ unit: "binary", minLength: 1 }),
  fc.constantFrom('a"b', "a\\b", "tab\there", "line\nbreak", "\u2028", "\u{1f600}", "é"),
);
const step = fc.option(fc.oneof(text, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })), {
  nil: undefined,
});
const args = fc.jsonValue().map((value) => canonicalize(value));

describe("a ledger record's data", () => {
  it("is written byte for byte as one JSON.stringify of its members wrote it, in both formats", () => {
    fc.assert(
      fc.property(
        text.filter((s) => s.isWellFormed()),
        text,
        fc.constantFrom(...Object.values(Effect)),
        step,
        fc.oneof(fc.stringMatching(/^[0-9a-f]{64}$/), text),
        args,
        (taskId, tool, effect, step, argsHash, argsText) => {
          const call = newCall({ taskId, tool, effect, step, argsHash, args: argsText });
          expect(encodeData(call, 1)).toBe(referenceV1(call));
          expect(encodeData(call, 2)).toBe(referenceV2(call));
          // Read back, the same call.
          const read = decodeData({ key: "call:k", state: "pending", data: encodeData(call, 1) } as never);
          expect([read.taskId, read.tool, read.step, read.argsHash, read.args.text()]).toEqual([
            taskId,
            tool,
            step === undefined ? undefined : JSON.parse(JSON.stringify(step)),
            argsHash,
            argsText,
          ]);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("keeps the same bytes across calls of the same task and tool, and of others in between", () => {
    const calls = [
      newCall({ taskId: "t1", tool: "a", effect: "keyed", step: undefined, argsHash: "h1", args: '{"n":1}' }),
      newCall({ taskId: "t1", tool: "a", effect: "keyed", step: 2, argsHash: "h2", args: '{"n":2}' }),
      newCall({ taskId: "t2", tool: "a", effect: "keyed", step: undefined, argsHash: "h3", args: "[]" }),
      newCall({ taskId: "t1", tool: "b", effect: "unguarded", step: "s", argsHash: "h4", args: "null" }),
      newCall({
        taskId: "t1",
        tool: "a",
        effect: "idempotent",
        step: undefined,
        argsHash: "h5",
        args: '"x"',
      }),
    ];
    for (let round = 0; round < 3; round++) {
      for (const call of calls) {
        expect(encodeData(call, 1)).toBe(referenceV1(call));
        expect(encodeData(call, 2)).toBe(referenceV2(call));
      }
    }
  });

  it("with events or members a newer writer added, is written as before too", () => {
    const call: LedgerCall = {
      ...newCall({ taskId: "t", tool: "a", effect: "keyed", step: 3, argsHash: "h", args: '{"a":"\\""}' }),
      events: [{ type: "approval_requested", at: 1 }],
      extra: { later: { x: [1, 2] } },
    };
    expect(encodeData(call, 1)).toBe(referenceV1(call));
    expect(encodeData(call, 2)).toBe(referenceV2(call));
  });
});
