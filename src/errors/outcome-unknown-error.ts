import { brand, branded } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import { type KeyedPositional, keyedArgs } from "./keyed-args.js";
import type { RetryHints } from "./retry-hints.js";

/**
 * Why a call's outcome is unknown, as the model is told it (`modelTexts.outcomeUnknown`) and a caller may read it:
 * - `interrupted`: an attempt was cut off before its outcome was known (its process stopped while it was pending, a
 *   retry took over its lapsed lease).
 * - `unclassified_error`: the tool answered (or threw) an error, and nobody who knows said that the error means
 *   nothing happened (no `noEffect` classifier said so): `answer` holds the tool's own words.
 * - `unrecordable_result`: the tool ran, but what it returned is not JSON, so the ledger could not record it.
 * - `owner_unknown`: the owner (an MCP server's `mcpDedupe`, an A2A agent's `idempotentExecutor`) answered that an
 *   earlier call with this key may or may not have taken effect: `answer` holds its words.
 * - `expired`: the call waited for the same call running elsewhere, and its record expired meanwhile.
 */
export const OutcomeUnknownReason = {
  interrupted: "interrupted",
  unclassifiedError: "unclassified_error",
  unrecordableResult: "unrecordable_result",
  ownerUnknown: "owner_unknown",
  expired: "expired",
} as const;
export type OutcomeUnknownReason = (typeof OutcomeUnknownReason)[keyof typeof OutcomeUnknownReason];

interface UnknownBase extends ErrorOptions {
  /** The idempotency key of the call. */
  key: string;
}

/** The harness cannot tell whether an attempt of an unguarded tool took effect. */
export interface HarnessUnknown extends UnknownBase {
  by?: "harness";
  /** The tool's name. */
  tool: string;
  /** Why the outcome is unknown, for the message: `"its process stopped while it was pending"`. */
  why: string;
  /**
   * Why the outcome is unknown, as the model is told it.
   * @default "interrupted"
   */
  reason?: OutcomeUnknownReason;
  /** The tool's own words when it answered (or threw) an error (`reason: "unclassified_error"`). */
  answer?: string;
}

/** An MCP tool answered that an earlier call with this key may or may not have taken effect. */
export interface McpUnknown extends UnknownBase {
  by: "mcp";
  tool: string;
  /** The tool's own words. */
  detail: string;
}

/** An A2A agent (`idempotentExecutor`) answered that an earlier message with this key may or may not have taken effect. */
export interface A2aUnknown extends UnknownBase {
  by: "a2a";
  /** The tool's name in the harness. */
  tool: string;
  /** The agent's own words. */
  detail: string;
}

/** The owner middleware: a retry took over a key whose handler may have run (`rerunAfterTakeover: false`). */
export interface TakeoverUnknown extends UnknownBase {
  by: "takeover";
}

/**
 * A harness call waited for the same call running elsewhere, and when it looked again the record was gone, later
 * than `retentionMs` after it had last seen it: the other call may have finished (its effect done) and its record
 * expired meanwhile, so this call does not run the tool afresh.
 */
export interface ExpiredUnknown extends UnknownBase {
  by: "expired";
  tool: string;
  /** The harness's `retentionMs`. */
  retentionMs: number;
}

/** What an `OutcomeUnknownError` is made from: the key, and who could not tell what happened. */
export type OutcomeUnknownErrorData =
  | HarnessUnknown
  | McpUnknown
  | A2aUnknown
  | TakeoverUnknown
  | ExpiredUnknown;

/**
 * An `unguarded` call may or may not have taken effect (it failed after it may have reached the owner, or its
 * process stopped while it was pending), and the harness will not repeat it on its own. Check the world, then
 * record what happened with `harness.resolve(key, { result })`, or clear it to run again with
 * `harness.resolve(key, { retry: true })`. `cause` is the failure that made the outcome unknown, when there was one.
 */
export class OutcomeUnknownError extends IdemkeyError implements RetryHints {
  override name = "OutcomeUnknownError" as const;
  /** The idempotency key of the call, to pass to `harness.resolve`. */
  readonly key: string;
  /** Repeating the call cannot help until the outcome is resolved; read by the harness's default retry policy. */
  readonly retryable = false;
  /** Why the outcome is unknown: what the model is told (`modelTexts.outcomeUnknown`) besides the key. */
  readonly reason: OutcomeUnknownReason;
  /**
   * The words the tool (or the owner) answered, when an answer is why the outcome is unknown: an error result's
   * text, a thrown error's message, an owner's refusal. The model reads them with the reason.
   */
  readonly answer: string | undefined;

  constructor(data: OutcomeUnknownErrorData);
  /**
   * @deprecated Pass one object, `new OutcomeUnknownError({ key, tool, why })`, and the class writes the message.
   * The reason is `cause`'s when `cause` is an `OutcomeUnknownError` (an adapter rewording one), else `interrupted`.
   */
  constructor(key: string, message: string, options?: ErrorOptions);
  constructor(...args: [OutcomeUnknownErrorData] | KeyedPositional) {
    const { key, message, options } = keyedArgs(args, compose);
    super(message, options);
    this.key = key;
    const [first] = args;
    const said = typeof first === "object" ? reasonOf(first) : reasonOfCause(options?.cause);
    this.reason = said.reason;
    this.answer = said.answer;
  }
}
brand(OutcomeUnknownError, "OutcomeUnknownError");

type Said = { reason: OutcomeUnknownReason; answer: string | undefined };

function reasonOf(data: OutcomeUnknownErrorData): Said {
  switch (data.by) {
    case "mcp":
    case "a2a":
      return { reason: OutcomeUnknownReason.ownerUnknown, answer: data.detail };
    case "expired":
      return { reason: OutcomeUnknownReason.expired, answer: undefined };
    case "takeover":
      return { reason: OutcomeUnknownReason.interrupted, answer: undefined };
    default:
      return { reason: data.reason ?? OutcomeUnknownReason.interrupted, answer: data.answer };
  }
}

function reasonOfCause(cause: unknown): Said {
  // Read from the family's mark, as the guards read it: another copy of the package made it, maybe.
  if (branded(cause, "OutcomeUnknownError")) {
    const { reason, answer } = cause as OutcomeUnknownError;
    return { reason: reason ?? OutcomeUnknownReason.interrupted, answer };
  }
  return { reason: OutcomeUnknownReason.interrupted, answer: undefined };
}

function compose(data: OutcomeUnknownErrorData): string {
  switch (data.by) {
    case "mcp":
      return `The MCP tool "${data.tool}" refused the call: ${data.detail} Check whether it took effect, then resolve the key.`;
    case "a2a":
      return `The A2A agent behind "${data.tool}" refused the message: ${data.detail} Check whether it took effect, then resolve the key.`;
    case "takeover":
      return (
        `A retry took over the Idempotency-Key ${JSON.stringify(data.key)} after its lease ran out: the handler of ` +
        "the request that held it may have run, so it is not run again (rerunAfterTakeover: false)"
      );
    case "expired":
      return (
        `The call of "${data.tool}" waited for the same call running elsewhere (key ${data.key}), and its record was ` +
        `gone when it looked again more than retentionMs (${data.retentionMs} ms) later: that call may have finished, ` +
        "its effect done, and its record expired meanwhile, so this call does not run the tool again. Check whether it " +
        "took effect; a later call with the same key runs it anew. Keep retentionMs far above wait.maxDelayMs"
      );
    default:
      return (
        `The outcome of the unguarded tool "${data.tool}" is unknown: ${data.why}. Check whether it took effect, ` +
        `then call harness.resolve("${data.key}", { result }) or harness.resolve("${data.key}", { retry: true })`
      );
  }
}
