import type { RecordState } from "../store/types.js";
import { STATES } from "./views.js";

/** What the listing endpoints (`/api/calls`, `/api/keys`) read from their query alike: a state and a page. */
export interface ListQuery {
  state?: RecordState;
  offset: number;
  limit: number;
}

/** The query read, or the parameter at fault and why, for a 400 problem+json that names it. */
export function readListQuery(q: URLSearchParams): ListQuery | { param: string; detail: string } {
  const state = q.get("state") || undefined;
  if (state !== undefined && !STATES.includes(state as RecordState)) {
    return { param: "state", detail: `state must be one of ${STATES.join(", ")}` };
  }
  const offset = int(q.get("offset"), 0, 0, Number.MAX_SAFE_INTEGER);
  const limit = int(q.get("limit"), 50, 1, 500);
  if (offset === undefined || limit === undefined) {
    const param = offset === undefined ? "offset" : "limit";
    return { param, detail: `${param} must be a whole number in range` };
  }
  return { ...(state === undefined ? {} : { state: state as RecordState }), offset, limit };
}

/** A whole number from `min` to `max`, `fallback` when absent, `undefined` when anything else. */
export function int(text: string | null, fallback: number, min: number, max: number): number | undefined {
  if (text === null || text === "") return fallback;
  if (!/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return n >= min && n <= max ? n : undefined;
}
