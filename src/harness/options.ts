import { checkSecret } from "../key/idempotency-key.js";
import { numberOption } from "../options/number-option.js";
import { renamedOption } from "../options/renamed.js";
import { checkStore } from "../options/store-option.js";
import { memoryStore } from "../store/memory.js";
import type { Store } from "../store/types.js";
import { checkLedgerVersion } from "./ledger.js";
import { type ModelTexts, resolveModelTexts } from "./model-texts.js";
import type { LedgerVersion } from "./record/types.js";
import { type ResolvedRetry, type RetryOptions, resolveRetry } from "./retry.js";
import { defaultSleep, type Schedule, type Sleep, scheduler } from "./sleep.js";
import type { HarnessEvent } from "./types.js";

export interface WaitOptions {
  /**
   * How long a call waits for the same call running in another process (a live pending claim) before it throws
   * `WaitTimeoutError`. Longer than `leaseMs`, so that a claim whose process died is taken over within the wait.
   * @default 120000 (2 minutes)
   */
  timeoutMs?: number;
  /** The first pause between two looks at the ledger while waiting, in milliseconds. @default 25 */
  minDelayMs?: number;
  /** The longest pause between two looks; pauses double from `minDelayMs` up to it, with jitter. @default 1000 */
  maxDelayMs?: number;
}

export interface HarnessOptions {
  /**
   * A secret every harness of the fleet shares: keys (and the recorded args hash) become HMAC-SHA256 under it,
   * so that a key seen in a header or a log cannot be used to guess a low-entropy argument (see
   * `IdempotencyKeyOptions.secret`). Every process that calls the same owners must use the same secret.
   * @default none: keys are plain SHA-256
   */
  keySecret?: string | Uint8Array;
  /**
   * Where the ledger lives. Records are kept under `call:<idempotency key>`, so the store can be shared with the
   * owner-side middleware. A memory store forgets on restart; use `sqliteStore` (or a server store) for replays
   * across processes and crashes.
   * @default memoryStore() on the harness's `clock`
   */
  store?: Store;
  /**
   * How long a pending claim is held, in milliseconds. The harness renews it every third of this while the tool
   * runs, so a long tool keeps its claim; when its process dies, the next call with the same key takes over after
   * at most this long. Shorter means faster recovery, longer means fewer renewals and more tolerance for a stalled
   * event loop.
   * @default 30000
   */
  leaseMs?: number;
  /**
   * How long a ledger record is kept, in milliseconds, from its last state change (a completed call from its
   * completion). Past it the record is ignored (a later call with the same key runs again) and `purge` removes it.
   * Seven days outlives any agent task's retries and replays (which happen within minutes to hours, or a day for a
   * task resumed the next morning) while bounding the ledger's size. It must exceed `wait.maxDelayMs` (a
   * `TypeError` says so), and should exceed it by far: a call waiting for the same call in another process looks
   * at the ledger about that often, and when it finds the record gone more than `retentionMs` after its last look
   * (a stalled process), the other call may have finished and expired meanwhile, so it throws
   * `OutcomeUnknownError` rather than run the tool again.
   * @default 604800000 (7 days)
   */
  retentionMs?: number;
  /** @deprecated The former name of `retentionMs`; either works (both only with one value). */
  ttlMs?: number;
  /**
   * The format this process writes ledger records in (docs/ledger-format.md); it reads both. A rollout that moves a
   * fleet to 2 first deploys a version that reads 2 everywhere (keeping 1), then switches the writers: a process
   * that reads only 1 throws `LedgerStateError` on a record in format 2. A process on 1 writes a record it changes
   * back in format 1, losing nothing.
   * @default 1
   */
  ledgerVersion?: LedgerVersion;
  /** How failed attempts are retried; see `RetryOptions`. */
  retry?: RetryOptions;
  /** How a call waits for the same call running elsewhere; see `WaitOptions`. */
  wait?: WaitOptions;
  /**
   * How long a call parked for approval waits for the decision before it throws `WaitTimeoutError` (state
   * `awaiting_approval`). The record stays parked: a later call with the same key picks up the decision. 0 parks
   * and throws at once, for a harness that asks the person and comes back later. Pass the call a `signal` to stop
   * waiting earlier.
   * @default 600000 (10 minutes)
   */
  approvalTimeoutMs?: number;
  /**
   * Told of every call's progress: `executed`, `replayed`, `waited`, `retried`, `taken_over`, `outcome_unknown`,
   * `approval_requested`, `approved`, `denied`, `resolved`, `failed`. Called synchronously; an error it throws is
   * reported with `process.emitWarning` and otherwise ignored, so that logging can never break a call.
   */
  onEvent?: (event: HarnessEvent) => void;
  /**
   * The words every adapter shows the model for a call answered from the ledger (`replayed`) and for a call whose
   * outcome is unknown (`outcomeUnknown`): functions of `{ tool, key }`. Give either or both; the other keeps its
   * default (`defaultModelTexts`).
   * @default defaultModelTexts
   * @example modelTexts: { replayed: ({ tool }) => `${tool}: already done, result below.` }
   */
  modelTexts?: Partial<ModelTexts>;
  /** The clock every lease, wait and duration is measured with, in epoch ms; for tests. @default Date.now */
  clock?: () => number;
  /**
   * Waits `ms` milliseconds, or rejects with `signal.reason` when the signal aborts; used for backoff, polling and
   * lease renewal. For tests, with a fake `clock`.
   * @default a setTimeout-based sleep
   */
  sleep?: Sleep;
}

export interface Resolved {
  store: Store;
  leaseMs: number;
  retentionMs: number;
  ledgerVersion: LedgerVersion;
  retry: ResolvedRetry;
  waitTimeoutMs: number;
  waitMinDelayMs: number;
  waitMaxDelayMs: number;
  approvalTimeoutMs: number;
  onEvent: ((event: HarnessEvent) => void) | undefined;
  clock: () => number;
  sleep: Sleep;
  schedule: Schedule;
  keySecret: string | Uint8Array | undefined;
  modelTexts: ModelTexts;
}

export function resolveOptions(options: HarnessOptions = {}): Resolved {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  const clock = fn("clock", options.clock) ?? Date.now;
  const wait = options.wait ?? {};
  if (typeof wait !== "object" || wait === null) throw new TypeError("options.wait must be an object");
  const retention = renamedOption(options, "retentionMs", "ttlMs");
  const resolved: Resolved = {
    store: options.store ?? memoryStore({ clock }),
    leaseMs: positive("leaseMs", options.leaseMs, 30_000),
    // retentionMs, as the middleware and MCP say: ttlMs is the store's word for one write's expiry (lease + this).
    retentionMs: numberOption(...retention, 7 * 24 * 60 * 60 * 1000, { exclusive: true }),
    ledgerVersion: checkLedgerVersion(options.ledgerVersion),
    retry: resolveRetry(options.retry),
    waitTimeoutMs: nonNegative("wait.timeoutMs", wait.timeoutMs, 120_000),
    waitMinDelayMs: positive("wait.minDelayMs", wait.minDelayMs, 25),
    waitMaxDelayMs: positive("wait.maxDelayMs", wait.maxDelayMs, 1_000),
    approvalTimeoutMs: nonNegative("approvalTimeoutMs", options.approvalTimeoutMs, 600_000),
    onEvent: fn("onEvent", options.onEvent),
    clock,
    sleep: fn("sleep", options.sleep) ?? defaultSleep,
    schedule: scheduler(options.sleep),
    keySecret: checkSecret(options.keySecret, "options.keySecret"),
    modelTexts: resolveModelTexts(options.modelTexts),
  };
  checkStore(resolved.store, ["claim", "get", "update", "delete", "list", "purge"]);
  if (resolved.waitMaxDelayMs < resolved.waitMinDelayMs) {
    throw new TypeError("options.wait.maxDelayMs must not be less than options.wait.minDelayMs");
  }
  if (resolved.retentionMs <= resolved.waitMaxDelayMs) {
    throw new TypeError(
      `${retention[0]} (${resolved.retentionMs}) must exceed options.wait.maxDelayMs (${resolved.waitMaxDelayMs}): ` +
        "a call waiting for the same call elsewhere looks at the ledger that often, and must find its record there",
    );
  }
  return resolved;
}

const positive = (name: string, value: unknown, fallback: number) =>
  numberOption(`options.${name}`, value, fallback, { exclusive: true });

// Infinity allowed: waiting (or parking for approval) without a deadline is a choice a caller may make.
const nonNegative = (name: string, value: unknown, fallback: number) =>
  numberOption(`options.${name}`, value, fallback, { infinite: true });

function fn<F>(name: string, value: F | undefined): F | undefined {
  if (value !== undefined && typeof value !== "function") {
    throw new TypeError(`options.${name} must be a function, got ${typeof value}`);
  }
  return value;
}
