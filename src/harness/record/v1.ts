import { argsFromText, type LedgerArgs } from "./args.js";
import { plainMembers } from "./members.js";
import type { LedgerCall, LedgerData } from "./types.js";

const KNOWN = new Set(["v", "taskId", "tool", "effect", "step", "argsHash", "args", "events"]);

export function encodeV1(call: LedgerCall): string {
  const { taskId, tool, effect, step, argsHash, args, events, extra } = call;
  const members = plainMembers(call);
  if (members !== undefined) {
    // The members in the order of the object below: step, assigned last, comes after events.
    const tail = step === undefined ? "}" : `,"step":${JSON.stringify(step)}}`;
    return `{"v":1,${members},"argsHash":${JSON.stringify(argsHash)},"args":${JSON.stringify(args.text())},"events":[]${tail}`;
  }
  const data: LedgerData = { v: 1, taskId, tool, effect, argsHash, args: args.text(), events };
  if (step !== undefined) data.step = step;
  return JSON.stringify(extra === undefined ? data : { ...data, ...extra });
}

/** The call in a parsed v1 record, or `undefined` when the record does not have v1's shape. */
export function decodeV1(d: Record<string, unknown>): LedgerCall | undefined {
  if (typeof d.taskId !== "string" || typeof d.args !== "string" || !Array.isArray(d.events))
    return undefined;
  return fromParsed(d, argsFromText(d.args));
}

/** The members every format shares, and the unknown ones kept aside. */
export function fromParsed(d: Record<string, unknown>, args: LedgerArgs): LedgerCall {
  const call = {
    taskId: d.taskId,
    tool: d.tool,
    effect: d.effect,
    argsHash: d.argsHash,
    args,
    events: d.events,
  } as LedgerCall;
  if (d.step !== undefined) call.step = d.step as string | number;
  // for...in, not Object.keys: no array per record read (a parsed JSON object has no inherited enumerable names).
  for (const name in d) {
    if (KNOWN.has(name)) continue;
    call.extra ??= {};
    call.extra[name] = d[name];
  }
  return call;
}
