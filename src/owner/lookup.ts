import type { StoreRecord } from "../store/types.js";
import type { OwnerResponse } from "./problem.js";
import { decodeSaved } from "./saved-response.js";

/**
 * What an owner answers to "did key K happen?" (the body of a lookup, `application/json`), always about the caller's
 * own scope. `unknown` is also the answer about another caller's key: the record's store key is a hash of (scope,
 * key), so a lookup from another scope finds nothing, exactly as for a key nobody sent.
 */
export type LookupAnswer =
  /** It ran and its response was recorded: `status` (and `body`, when it was saved as text) are that response's. */
  | { key: string; state: "completed"; status: number; body?: string; contentType?: string }
  /** A request with the key is being processed now. */
  | { key: string; state: "in_flight" }
  /** It was interrupted while being processed (or threw), and this server cannot tell either whether it took effect. */
  | { key: string; state: "outcome_unknown" }
  /** This server has no record of the key in the caller's scope: it never ran it (or the record expired). */
  | { key: string; state: "unknown" };

/** The answer for the record found under the caller's (scope, key), or none. */
export function lookupAnswer(key: string, record: StoreRecord | undefined, now: number): LookupAnswer {
  if (record === undefined) return { key, state: "unknown" };
  if (record.state === "completed") {
    const saved = decodeSaved(record.result);
    if (!saved.saved) return { key, state: "completed", status: saved.status };
    const { status, headers, body } = saved.response;
    const answer: LookupAnswer = { key, state: "completed", status };
    const text = utf8(body);
    if (text !== undefined) answer.body = text;
    const type = headers.find(([name]) => name === "content-type");
    if (type !== undefined) answer.contentType = type[1];
    return answer;
  }
  if (record.state === "pending") {
    // A lease that ran out is a handler that stopped mid-way: the next request with the key would be told so too.
    const lapsed = record.leaseUntil !== null && record.leaseUntil <= now;
    return { key, state: lapsed ? "outcome_unknown" : "in_flight" };
  }
  return { key, state: "outcome_unknown" };
}

const encoder = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export function lookupResponse(answer: LookupAnswer): OwnerResponse {
  return {
    status: 200,
    headers: [
      ["content-type", "application/json"],
      // An answer about a key changes as its request goes on: never cached, never shared.
      ["cache-control", "no-store"],
    ],
    body: encoder.encode(JSON.stringify(answer)),
  };
}

function utf8(body: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(body);
  } catch {
    return undefined;
  }
}
