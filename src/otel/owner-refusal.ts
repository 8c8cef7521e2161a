import type { Attributes } from "@opentelemetry/api";
import { Refusal } from "../mcp/meta.js";
import type { Instruments } from "./instruments.js";

/**
 * Why the owner middleware answered a request without running the handler, read from its answer alone: 422 is only
 * sent for a reused key, and of its two 409s the key in flight says `x-should-retry: true` (a retry gets the result)
 * while an unknown outcome says `false` (it never will). `undefined` for the rest (a missing or invalid key, a body
 * too large, an answer not saved): the status says which.
 */
export function ownerRefusal(status: number, shouldRetry: string | null | undefined): Refusal | undefined {
  if (status === 422) return Refusal.keyReused;
  if (status === 409) return shouldRetry === "true" ? Refusal.keyInFlight : Refusal.outcomeUnknown;
  if (status === 503) return Refusal.unavailable;
  return undefined;
}

/** Counts an owner's refusal where it is a decision of its own: a conflict, a key in flight, an unknown outcome. */
export function countRefusal(
  meters: Instruments,
  refusal: Refusal | undefined,
  attributes: Attributes,
): void {
  if (refusal === Refusal.keyReused) meters.conflicts.add(1, attributes);
  else if (refusal === Refusal.keyInFlight) meters.inFlight.add(1, attributes);
  else if (refusal === Refusal.outcomeUnknown) meters.unknown.add(1, attributes);
}
