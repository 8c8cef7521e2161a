/**
 * What happened to an owner's key besides its claim and its answer (the middleware's, MCP's and A2A's records), kept
 * in the record's data as `events`, for the inspector: a retry that took the key over and recorded its outcome
 * unknown, and the attempt it was taken from settling that outcome with its late save.
 */
export type OwnerEvent =
  | { type: "taken_over"; at: number }
  | { type: "resolved"; at: number; how: "late_completion" };

/** The record's data (a JSON object) with `event` added to its `events`; data that is not an object is kept as is. */
export function withOwnerEvent(data: string | null, event: OwnerEvent): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data ?? "null");
  } catch {
    return data;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return data;
  const fields = parsed as { events?: unknown };
  const events = Array.isArray(fields.events) ? fields.events : [];
  return JSON.stringify({ ...fields, events: [...events, event] });
}

/** The `late` of a hold's save (`SaveOptions`): the audit trail with the late completion. */
export function lateCompletion(unknown: { data: string | null }): string | null {
  return withOwnerEvent(unknown.data, { type: "resolved", at: Date.now(), how: "late_completion" });
}
