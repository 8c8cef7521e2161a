import { argsFromValue } from "./args.js";
import { plainMembers } from "./members.js";
import type { LedgerCall } from "./types.js";
import { fromParsed } from "./v1.js";

export function encodeV2(call: LedgerCall): string {
  const { taskId, tool, effect, step, argsHash, events, extra } = call;
  const members = plainMembers(call);
  if (members !== undefined) {
    const stepMember = step === undefined ? "" : `"step":${JSON.stringify(step)},`;
    return `{"v":2,${members},${stepMember}"argsHash":${JSON.stringify(argsHash)},"events":[],"args":${call.args.text()}}`;
  }
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
  // The canonical text is spliced in as it is: JSON.stringify of the parsed value would reorder integer-like names.
  return `${head.slice(0, -1)},"args":${call.args.text()}}`;
}

/** The call in a parsed v2 record, or `undefined` when the record does not have v2's shape. */
export function decodeV2(d: Record<string, unknown>): LedgerCall | undefined {
  if (typeof d.taskId !== "string" || !("args" in d) || !Array.isArray(d.events)) return undefined;
  return fromParsed(d, argsFromValue(d.args));
}
