import { interrupt } from "@langchain/langgraph";
import type { Harness, Tool } from "../harness/types.js";

/** What a LangGraph interrupt for an idemkey approval carries to the person: the exact call and its key. */
export interface ApprovalRequest {
  readonly type: "idemkey/approval";
  /** The idempotency key the decision is bound to. */
  readonly key: string;
  readonly tool: string;
  readonly args: unknown;
}

/**
 * The resume value for an `ApprovalRequest` (`new Command({ resume: decision })`): `key` must be the request's key, so
 * a decision taken for one call never approves another (a re-sampled call with other arguments has another key).
 */
export type ApprovalDecision =
  | { key: string; approve: true; by?: string }
  | { key: string; approve: false; reason: string; by?: string };

/** How often a parked call looks for the decision just recorded. */
const POLL_MS = 5;

/**
 * Runs `tool` (which `requiresApproval`) under a decision asked for with LangGraph's `interrupt()`: a call never
 * decided interrupts the graph with an `ApprovalRequest`; the resume value is recorded in the ledger against that
 * key (`harness.approve` / `harness.deny`), and from then on the ledger decides. A denied call stays denied on every
 * later resume; an approved one runs once and replays.
 */
export async function callWithApproval<A, R>(
  harness: Harness,
  taskId: string,
  tool: Tool<A, R>,
  args: A,
  signal: AbortSignal | undefined,
): Promise<R> {
  const key = harness.key(taskId, tool, args);
  const entry = await harness.get(key);
  const options = signal ? { signal } : undefined;
  if (entry !== undefined && entry.state !== "awaiting_approval")
    return harness.call(taskId, tool, args, options);

  const request: ApprovalRequest = { type: "idemkey/approval", key, tool: tool.name, args };
  // Throws LangGraph's GraphInterrupt the first time; on resume it returns the person's decision.
  const decision = interrupt<ApprovalRequest, ApprovalDecision>(request);
  checkDecision(decision, key);
  // The call parks its record (or finds it parked), then the decision moves it on.
  let settled = false;
  const parked = harness.call(taskId, tool, args, options).finally(() => {
    settled = true;
  });
  parked.catch(() => {});
  while (!settled) {
    const now = await harness.get(key);
    if (now !== undefined && now.state !== "awaiting_approval") break;
    if (now?.state === "awaiting_approval") {
      const by = decision.by === undefined ? {} : { by: decision.by };
      await (decision.approve ? harness.approve(key, by) : harness.deny(key, decision.reason, by));
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return parked;
}

function checkDecision(decision: unknown, key: string): asserts decision is ApprovalDecision {
  const d = decision as Partial<{ key: unknown; approve: unknown; reason: unknown; by: unknown }> | null;
  if (typeof d !== "object" || d === null) {
    throw new TypeError(`the resume value for the approval of ${key} must be { key, approve, reason? }`);
  }
  if (d.key !== key) {
    throw new TypeError(
      `the resume value's key ${JSON.stringify(d.key)} is not the key of the call waiting for approval (${key})`,
    );
  }
  if (typeof d.approve !== "boolean") throw new TypeError("the resume value's approve must be a boolean");
  if (!d.approve && typeof d.reason !== "string") {
    throw new TypeError("the resume value of a denial must have a reason (a string)");
  }
  if (d.by !== undefined && typeof d.by !== "string")
    throw new TypeError("the resume value's by must be a string");
}
