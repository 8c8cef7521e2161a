import type { LedgerCall } from "./types.js";

/**
 * `"taskId":…,"tool":…,"effect":…` for a new call's record, or `undefined` when the call is not a plain new one
 * (events, members a newer writer added, or a member of an unexpected type read from a record): those are written
 * by one JSON.stringify of the whole object. A new call's text is spliced instead, byte for byte what that
 * JSON.stringify writes (test/harness/ledger-encoding.test.ts): the object's stringify was 0.4-0.6 µs of a memory
 * fresh call, its members' own JSON.stringify about a third of it, and a task's calls share their task and tools.
 */
export function plainMembers(call: LedgerCall): string | undefined {
  const { taskId, tool, effect, step, argsHash } = call;
  if (call.events.length !== 0 || call.extra !== undefined) return undefined;
  if (typeof tool !== "string" || typeof effect !== "string" || typeof argsHash !== "string")
    return undefined;
  if (step !== undefined && typeof step !== "string" && typeof step !== "number") return undefined;
  // One entry: the calls of a task follow one another with the same task id and mostly the same tool.
  if (taskId !== last.taskId || tool !== last.tool || effect !== last.effect) {
    last = {
      taskId,
      tool,
      effect,
      members: `"taskId":${JSON.stringify(taskId)},"tool":${JSON.stringify(tool)},"effect":${JSON.stringify(effect)}`,
    };
  }
  return last.members;
}

let last = { taskId: "", tool: "", effect: "", members: "" };
