import type { OutcomeUnknownReason } from "../errors/outcome-unknown-error.js";
import type { PurgeOptions } from "../store/purge.js";
import type { RecordState } from "../store/types.js";
import type { ModelTexts } from "./model-texts.js";
import type { NoEffect } from "./retry.js";

/** `harness.purge()`'s options: `batchSize`, as every `purge()` takes, and the deprecated `limit`. */
/**
 * How one tool's calls are keyed and repeated, where an adapter takes policies by tool name (`idempotentTools`'s
 * and `idempotencyMiddleware`'s `effects`). `A` is the tool's input.
 */
export interface ToolPolicy<A = unknown> {
  /** How the tool's side effect behaves when repeated; see `Effect`. */
  effect: Effect;
  /**
   * The natural identity of a call, as `defineTool`'s `identity`: the key is derived from what it returns instead of
   * from all the input, so a call the model re-words is still the same call.
   * @default all the input
   */
  identity?: (input: A) => unknown;
  /** Which failures certainly had no effect, as `defineTool`'s `noEffect`. @default none */
  noEffect?: NoEffect;
}

export interface HarnessPurgeOptions extends PurgeOptions {
  /**
   * @deprecated Removes one batch of at most `limit` records and stops (what `purge` did before it took
   * `batchSize`); use `batchSize`, which goes on until every expired record is gone. Not both.
   */
  limit?: number;
}

/** How a tool's side effect behaves when the call is repeated; decides what the harness may repeat on its own. */
export const Effect = {
  /** No side effect: run and retried freely, never recorded in the ledger. */
  read: "read",
  /** Repeating has no further effect (a PUT of a state): recorded, retried and re-run freely. */
  idempotent: "idempotent",
  /** The owner dedupes on `ctx.idempotencyKey`: retries and replays after a crash run again with the same key. */
  keyed: "keyed",
  /**
   * The owner can neither take a key nor enforce a unique constraint: never repeated once it may have reached the
   * owner; an ambiguous failure ends in `OutcomeUnknownError` until the outcome is resolved.
   */
  unguarded: "unguarded",
} as const;
export type Effect = (typeof Effect)[keyof typeof Effect];

/** What a tool's `run` and `reconcile` receive besides the arguments. */
export interface ToolContext {
  /** The key to forward to the owner (an `Idempotency-Key` header, a unique column); the same on every attempt. */
  readonly idempotencyKey: string;
  readonly taskId: string;
  /** The tool's name. */
  readonly tool: string;
  /** 1 for the first attempt; counts on across retries and across a takeover in another process. */
  readonly attempt: number;
  /** Aborted when the caller's `signal` is; pass it on to the request. Never aborted without a caller's signal. */
  readonly signal: AbortSignal;
}

/**
 * What `reconcile` found out about a call whose outcome was unknown; `undefined` means it could not tell. `evidence`
 * (a JSON value: what the owner answered, a row's id) is kept in the audit trail by the reconciler.
 */
export type ReconcileResult<R> =
  | { status: "done"; result: R; evidence?: unknown }
  | { status: "not_done"; evidence?: unknown }
  | undefined;

export interface ToolDefinition<A, R> {
  /** Part of every key, so renaming a tool gives its calls new keys. A non-empty string. */
  name: string;
  /** How the tool's side effect behaves when repeated: `read`, `idempotent`, `keyed` or `unguarded`. Required. */
  effect: Effect;
  /**
   * The natural identity of a call: the key is derived from what this returns instead of from all the arguments,
   * so that a call the model re-words (another PR title, the same repo and branch) is still the same call. The
   * value must be JSON. A later call with the same identity but other arguments replays (or takes over) the first
   * one with the first one's arguments, and its `replayed` event says `argsDiffer: true`.
   * @default all the arguments
   * @example identity: (args) => ({ repo: args.repo, head: args.head })
   */
  identity?: (args: A) => unknown;
  /**
   * Says which failures certainly had no effect, for a tool whose errors do not say so themselves (a payment
   * SDK's `CardDeclinedError`, an MCP server's validation errors): `true` for "nothing happened", `false` or
   * `undefined` for "cannot tell". An error answer (`ErrorAnswer`) arrives with the framework's answer in `.answer`.
   * Asked when the error does not say `noEffect: true` itself; it matters for `unguarded` tools, whose other failures
   * end in `OutcomeUnknownError` (docs/integration-contract.md). A classifier that throws counts as "cannot tell".
   * @default none: only an error's own `noEffect: true` says nothing happened
   * @example noEffect: (error) => error instanceof CardDeclinedError
   */
  noEffect?: NoEffect;
  /**
   * Parks every new call as awaiting approval, bound to its exact key, until `harness.approve(key)` or
   * `harness.deny(key, reason)`. Not for `read` tools, which have no ledger record to park.
   * @default false
   */
  requiresApproval?: boolean;
  /**
   * Aborts `ctx.signal` this many milliseconds after each attempt starts (with a `TimeoutError` reason), for a tool
   * that passes the signal on to its request. The attempt's failure is then retried or reported like any other; a
   * tool that ignores the signal runs on, and its outcome is recorded when it ends.
   * @default none
   */
  timeoutMs?: number;
  /**
   * For `unguarded` tools only: checks the world after the harness lost track of a call (its process stopped while
   * it was pending, or an attempt failed ambiguously) and says what happened. `{ status: "done", result }` records
   * the result, `{ status: "not_done" }` lets the call run (again), and `undefined` leaves the outcome unknown
   * (`OutcomeUnknownError`). Also tried again by each later call with the same key while the outcome is unknown.
   * @default none: an ambiguous call's outcome stays unknown until `harness.resolve`
   */
  reconcile?: (args: A, ctx: ToolContext) => ReconcileResult<R> | Promise<ReconcileResult<R>>;
  /**
   * Does the work. Receives the call's arguments and a context carrying the idempotency key to forward. Must
   * return a JSON value (plain objects, arrays, strings, finite numbers, booleans, null; `toJSON` is applied), which
   * the ledger records; every caller, including the first, gets back its JSON form. Throw an error with
   * `retryable`, `retryAfterMs` or `noEffect` (see `ToolCallError`) to steer the retries.
   */
  run: (args: A, ctx: ToolContext) => R | Promise<R>;
}

/** A tool made by `defineTool`, ready for `harness.call`. */
export interface Tool<A, R> {
  readonly name: string;
  readonly effect: Effect;
  readonly identity: ((args: A) => unknown) | undefined;
  readonly noEffect: NoEffect | undefined;
  readonly requiresApproval: boolean;
  readonly timeoutMs: number | undefined;
  readonly reconcile: ToolDefinition<A, R>["reconcile"];
  readonly run: (args: A, ctx: ToolContext) => R | Promise<R>;
}

export interface CallOptions {
  /** Stops waiting and retrying, and is passed to the tool as `ctx.signal`. */
  signal?: AbortSignal;
  /**
   * Tells apart legitimate identical calls within one task (two identical messages): the key becomes the SHA-256 of
   * the canonical form of `[taskId, tool, identityOrArgs, step]`. Use a position in the plan that stays the same
   * when the task is replayed, never a random value or a timestamp.
   */
  step?: string | number;
}

/** A state change recorded in a ledger entry's audit trail (`data.events`), for the inspector. */
export type LedgerEvent =
  | { type: "approval_requested"; at: number }
  | { type: "approved"; at: number; by?: string }
  | { type: "denied"; at: number; by?: string; reason: string }
  | {
      type: "resolved";
      at: number;
      by?: string;
      /** `result`/`retry`: through `harness.resolve`; `reconcile`: the tool's reconcile; `late_completion`: the attempt
       * that had been given up on finished after all. */
      how: "result" | "retry" | "reconcile" | "late_completion";
      /** Set by the reconciler: what reconcile found (`done`: completed; `not_done`: approved to run again). */
      outcome?: "done" | "not_done";
      /** Set by the reconciler: the `evidence` reconcile gave, as JSON. */
      evidence?: unknown;
    }
  /**
   * The outcome became unknown: `error` says so for a person; `reason` and `answer` (the tool's own words, when an
   * answer it gave is why) are what a later call that finds the key on hold tells the model. Without `reason` (a
   * record written before it was kept, or by the reconciler) the reason is `interrupted`.
   */
  | { type: "outcome_unknown"; at: number; error: string; reason?: OutcomeUnknownReason; answer?: string }
  /**
   * A reconciler could not decide the outcome and left it for a person (or its next try, at `nextAt`): `reason` is
   * what the inspector shows; `tries` counts the reconcilers' tries so far. Replaced, not repeated, by the next one.
   */
  | { type: "reconcile_undecided"; at: number; by: string; reason: string; tries: number; nextAt: number }
  /** A call took over the claim of a process that stopped; recorded with the next write of the record. */
  | { type: "taken_over"; at: number; previousAttempts: number };

/** One call as the ledger knows it, parsed: what `harness.get` and `harness.list` return. */
export interface LedgerEntry {
  /** The idempotency key (the store key without its `call:` prefix). */
  key: string;
  state: RecordState;
  taskId: string;
  tool: string;
  effect: Effect;
  step?: string | number;
  /** SHA-256 hex of the canonical JSON of the full arguments of the call that created the record. */
  argsHash: string;
  /** Those arguments, parsed. */
  args: unknown;
  /** The recorded result, parsed; only in the `completed` state. */
  result?: unknown;
  /**
   * Attempts recorded so far. An `unguarded` attempt is counted before it starts (so 0 means nothing was sent);
   * other attempts before each retry and at the end (so 0 while the first attempt runs).
   */
  attempts: number;
  /** Epoch ms until which a pending claim is held, or `null`. */
  leaseUntil: number | null;
  /** The audit trail of state changes, oldest first. */
  events: LedgerEvent[];
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
}

interface EventBase {
  key: string;
  taskId: string;
  tool: string;
  /** The attempt the event is about (for a replay, the attempts the ledger recorded). */
  attempt: number;
  /** Milliseconds since the `harness.call` began (for `approved`, `denied`, `resolved`: since the action began). */
  durationMs: number;
}

/** What `onEvent` receives; `type` tells them apart. */
export type HarnessEvent =
  /** The tool ran and returned; `recorded: false` when the ledger could not record it (its claim was lost). */
  | (EventBase & { type: "executed"; recorded: boolean; argsDiffer: boolean })
  /** Answered from the ledger without running the tool. `argsDiffer`: the identity matched but the recorded call had
   * other arguments; the recorded result is returned. */
  | (EventBase & { type: "replayed"; argsDiffer: boolean })
  /** Waited for another call with the same key: in this process (`on: "in_process"`), running elsewhere
   * (`"pending"`) or for a person's decision (`"awaiting_approval"`). */
  | (EventBase & { type: "waited"; on: "in_process" | "pending" | "awaiting_approval" })
  /** An attempt failed and another follows after `delayMs`. */
  | (EventBase & { type: "retried"; delayMs: number; error: unknown })
  /** This call took over a claim whose lease had expired (its process stopped). */
  | (EventBase & { type: "taken_over"; previousAttempts: number })
  | (EventBase & { type: "outcome_unknown"; error: unknown })
  | (EventBase & { type: "approval_requested" })
  | (EventBase & { type: "approved"; by: string | undefined })
  | (EventBase & { type: "denied"; by: string | undefined; reason: string })
  /**
   * An unknown outcome became known: through `harness.resolve` (`result`, `retry`), the tool's reconcile, or this
   * call's own attempt, given up on by a taker, recording its result after all (`late_completion`, after `executed`).
   */
  | (EventBase & {
      type: "resolved";
      by: string | undefined;
      how: "result" | "retry" | "reconcile" | "late_completion";
    })
  /** The final attempt failed; the claim was released and `error` is thrown to the caller. */
  | (EventBase & { type: "failed"; error: unknown });

export type HarnessEventType = HarnessEvent["type"];

/** What `harness.resolve` is told about a call whose outcome was unknown. */
export type Resolution =
  /** It took effect, with this result (a JSON value), which later calls replay. */
  | { result: unknown }
  /** It did not take effect: the next call with the same key runs it. */
  | { retry: true };

export interface ActionOptions {
  /** Who decided, recorded in the audit trail. */
  by?: string;
}

/** What `harness.callWithOutcome` returns: the value `call` returns, and how it was reached. */
export interface CallOutcome<R> {
  readonly value: R;
  /**
   * `true` when this call did not run the tool: it returned a recorded result (a replay), or the result of the same
   * call that ran in this process or elsewhere while it waited. Adapters tell the model so (`modelTexts.replayed`).
   */
  readonly replayed: boolean;
}

export interface Harness {
  /**
   * Calls `tool` once for this task and these arguments: runs it under a fresh claim, replays a recorded result,
   * waits for the same call running elsewhere, or takes over a claim whose process stopped. The arguments must be
   * JSON (they are hashed into the key and recorded): anything else throws `CanonicalizationError` with its path
   * before the ledger is touched. Throws the tool's final error, `OutcomeUnknownError`, `ApprovalDeniedError` or
   * `WaitTimeoutError`.
   */
  call<A, R>(taskId: string, tool: Tool<A, R>, args: A, options?: CallOptions): Promise<R>;
  /**
   * `call`, also telling whether the tool ran for this call or its result was already there (`replayed`): what an
   * adapter needs to tell the model that an action was already done.
   */
  callWithOutcome<A, R>(
    taskId: string,
    tool: Tool<A, R>,
    args: A,
    options?: CallOptions,
  ): Promise<CallOutcome<R>>;
  /** The texts the model reads for a replayed call and for an unknown outcome: `HarnessOptions.modelTexts`. */
  readonly modelTexts: ModelTexts;
  /** The idempotency key `call` would use, without calling. */
  key<A, R>(taskId: string, tool: Tool<A, R>, args: A, options?: Pick<CallOptions, "step">): string;
  /** The live ledger entry of a key, parsed, or `undefined`. */
  get(key: string): Promise<LedgerEntry | undefined>;
  /** Live ledger entries in key order, filtered and paged as `Store.list`. */
  list(query?: { state?: RecordState; after?: string; limit?: number }): Promise<LedgerEntry[]>;
  /** Approves the call parked under `key`; the parked call (or the next call with that key) runs it. */
  approve(key: string, options?: ActionOptions): Promise<LedgerEntry>;
  /** Denies the call parked under `key`: it and every later call with that key throw `ApprovalDeniedError`. */
  deny(key: string, reason: string, options?: ActionOptions): Promise<LedgerEntry>;
  /** Records what happened to a call whose outcome was unknown. */
  resolve(key: string, resolution: Resolution, options?: ActionOptions): Promise<LedgerEntry>;
  /**
   * Removes every expired record from the store (all of its expired records, not only the ledger's), `batchSize`
   * at a time, and returns how many: what the middleware's `purge()` does.
   */
  purge(options?: HarnessPurgeOptions): Promise<number>;
}
