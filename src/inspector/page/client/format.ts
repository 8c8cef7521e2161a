import type { RecordState } from "../../../store/types.js";
import type { Observation } from "../../snapshot.js";
import type { CallEvent } from "../../views.js";

/** Every state, in the order the counts bar shows them. */
export const STATES: readonly RecordState[] = [
  "pending",
  "awaiting_approval",
  "approved",
  "outcome_unknown",
  "completed",
  "denied",
];

export const LABEL: Record<RecordState, string> = {
  pending: "pending",
  completed: "completed",
  awaiting_approval: "awaiting approval",
  approved: "approved",
  denied: "denied",
  outcome_unknown: "outcome unknown",
};

export const stateColor = (state: string): string => `var(--${state})`;
export const shortKey = (key: string): string => `${key.slice(0, 10)}…`;
export const iso = (ms: number): string => new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC");

export function clock(ms: number): string {
  const d = new Date(ms);
  return `${d.toLocaleTimeString([], { hour12: false })}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

export function span(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  if (ms < 3600000) return `${(ms / 60000).toFixed(1)} min`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

export function ago(ms: number): string {
  const s = (Date.now() - ms) / 1000;
  if (s < 0) return `in ${span(-s * 1000)}`;
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function describeEvent(e: CallEvent): string {
  const parts = [e.type.replace(/_/g, " ")];
  if ("by" in e && e.by) parts.push(`by ${e.by}`);
  if ("how" in e && e.how) parts.push(`(${e.how}${"outcome" in e && e.outcome ? `: ${e.outcome}` : ""})`);
  if ("reason" in e && e.reason) parts.push(`— ${e.reason}`);
  if ("error" in e && e.error) parts.push(`— ${e.error}`);
  if ("tries" in e && typeof e.tries === "number") parts.push(`(reconciler try ${e.tries})`);
  // Evidence is JSON the reconciler recorded (masked by the server, see views.ts `trail`); older servers sent it as text.
  if ("evidence" in e && e.evidence !== undefined) {
    parts.push(`evidence: ${typeof e.evidence === "string" ? e.evidence : JSON.stringify(e.evidence)}`);
  }
  if ("previousAttempts" in e && typeof e.previousAttempts === "number") {
    parts.push(`(after ${e.previousAttempts} attempt(s) of a stopped process)`);
  }
  return parts.join(" ");
}

export function describeObservation(o: Observation): string {
  if (o.type === "taken_over") return `lease taken over: claim ${o.from || "?"} → ${o.to || "?"}`;
  if (o.type === "attempts") return `attempts recorded: ${o.attempts}`;
  return `state ${LABEL[o.from as RecordState]} → ${LABEL[o.to as RecordState]}`;
}
