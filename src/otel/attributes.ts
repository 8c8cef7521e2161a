/**
 * The span and metric attribute names `idemkey/otel` writes. The `gen_ai.*` names are OpenTelemetry's GenAI semantic
 * conventions for `execute_tool` spans; the `idemkey.*` names are idemkey's own, for what those conventions have no
 * word for (the key, a replay, an unknown outcome).
 */
export const Attr = {
  operationName: "gen_ai.operation.name",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  /** The idempotency key of the call. */
  key: "idemkey.key",
  taskId: "idemkey.task_id",
  /** One of `Outcome`. */
  outcome: "idemkey.outcome",
  /** The attempt that gave the outcome (for a replay, the attempts the ledger recorded). */
  attempt: "idemkey.attempt",
  /** The tool's `Effect`. */
  effect: "idemkey.effect",
  /** What a wait was for: `in_process`, `pending` or `awaiting_approval`. */
  waitedOn: "idemkey.waited_on",
  /** The identity matched a recorded call that had other arguments. */
  argsDiffer: "idemkey.args_differ",
  /** What a reconciler made of a record: `done`, `not_done`, `undecided`, `conflict` or `failed`. */
  reconcileOutcome: "idemkey.reconcile_outcome",
  /** The SHA-256 (hex) of the key, in place of `idemkey.key` where keys are to be logged as hashes only. */
  keyHash: "idemkey.key_sha256",
  /** How an unknown outcome was resolved: `result` or `retry` (by a person), `reconcile` or `late_completion`. */
  resolvedHow: "idemkey.resolved_how",
  /** Who decided (the reconciler's `id`, or the person named in `harness.resolve`'s `by`). */
  by: "idemkey.by",
  /** Why `mcpDedupe` refused a call (one of `Refusal` from `idemkey/mcp`). */
  refusal: "idemkey.refusal",
} as const;

/** How a call ended, as `idemkey.outcome` says it. */
export const Outcome = {
  /** The tool ran in this call. */
  executed: "executed",
  /** Answered from the ledger (or the owner's saved result) without running the tool. */
  replayed: "replayed",
  /** Waited for the same call running in this process, elsewhere, or for an approval, and got its result. */
  waited: "waited",
  /** Took over the claim of a process that stopped, and ran the tool. */
  takenOver: "taken_over",
  /** Ended in `OutcomeUnknownError`: the tool may or may not have taken effect. */
  outcomeUnknown: "outcome_unknown",
  /** Ended in `ApprovalDeniedError`. */
  denied: "denied",
  /** The tool's final error (or a wait timeout, an abort) was thrown; the call can run again. */
  failed: "failed",
  /** `mcpDedupe` refused the call without running the tool (see `idemkey.refusal`). */
  refused: "refused",
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

/** The W3C baggage entry that carries the key to what the tool calls, so the owner's spans can name it too. */
export const KEY_BAGGAGE = "idemkey.key";

/** The baggage entry that carries the key's SHA-256 in its place when `hashKeys` is set. */
export const KEY_HASH_BAGGAGE = "idemkey.key_sha256";

/** The instrumentation scope of the tracer and the meter. */
export const SCOPE = "idemkey";
