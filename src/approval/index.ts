import { LedgerStateError } from "../errors/ledger-state-error.js";
import type { CallOutcome, Harness, Tool } from "../harness/types.js";

/**
 * What a framework's own pause (LangGraph's `interrupt()`, Mastra's `suspend()`) carries to the person when a call
 * needs approval: the exact call and its key.
 */
export interface ApprovalRequest {
  readonly type: "idemkey/approval";
  /** The idempotency key the decision is bound to. */
  readonly key: string;
  readonly tool: string;
  readonly args: unknown;
}

/**
 * The resume value for an `ApprovalRequest` (LangGraph's `new Command({ resume: decision })`, Mastra's
 * `run.resume({ resumeData: decision })`): `key` must be the request's key, so a decision taken for one call never
 * approves another (a re-sampled call with other arguments has another key).
 */
export type ApprovalDecision =
  | { key: string; approve: true; by?: string }
  | { key: string; approve: false; reason: string; by?: string };

/** How often a parked call looks for the decision just recorded. */
const POLL_MS = 5;

/**
 * Runs `tool` (which `requiresApproval`) under a decision asked for with the framework's own pause: a call never
 * decided calls `ask` with an `ApprovalRequest`, which pauses the run (throws, as LangGraph's `interrupt()` does, or
 * returns `undefined` once it has suspended, as Mastra's `suspend()`) or returns the person's decision on resume. The
 * decision is recorded in the ledger against that key (`harness.approve` / `harness.deny`), and from then on the
 * ledger decides: a denied call stays denied on every later resume; an approved one runs once and replays.
 * Returns `undefined` when the run was paused, else the value and whether it was `replayed` (`callWithOutcome`).
 */
export async function callWithApproval<A, R>(
  harness: Harness,
  taskId: string,
  tool: Tool<A, R>,
  args: A,
  signal: AbortSignal | undefined,
  ask: (request: ApprovalRequest) => unknown,
): Promise<CallOutcome<R> | undefined> {
  const key = harness.key(taskId, tool, args);
  const entry = await harness.get(key);
  const options = signal ? { signal } : undefined;
  if (entry !== undefined && entry.state !== "awaiting_approval") {
    return harness.callWithOutcome(taskId, tool, args, options);
  }

  const request: ApprovalRequest = { type: "idemkey/approval", key, tool: tool.name, args };
  const decision = await ask(request);
  if (decision === undefined) return undefined;
  checkDecision(decision, key);
  // The call parks its record (or finds it parked), then the decision moves it on.
  let settled = false;
  const parked = harness.callWithOutcome(taskId, tool, args, options).finally(() => {
    settled = true;
  });
  parked.catch(() => {});
  while (!settled) {
    const now = await harness.get(key);
    if (now !== undefined && now.state !== "awaiting_approval") break;
    if (now?.state === "awaiting_approval") {
      const by = decision.by === undefined ? {} : { by: decision.by };
      try {
        await (decision.approve ? harness.approve(key, by) : harness.deny(key, decision.reason, by));
      } catch (error) {
        // A concurrent resume recorded its decision first: the parked call follows the record, whichever it was.
        if (!(error instanceof LedgerStateError)) throw error;
      }
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
