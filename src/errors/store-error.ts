import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import type { RetryHints } from "./retry-hints.js";

interface StoreErrorBase extends ErrorOptions {
  /** The engine: `"postgres"`, `"redis"`. */
  store: string;
  /** The operation that failed: `claim`, `update`, `effectOnce`, ... */
  operation: string;
  /** The key the operation was about, when there was one. */
  key?: string | undefined;
}

/** The server failed or could not be reached (the usual case, what `guardStore` reports). */
export interface StoreFailure extends StoreErrorBase {
  reason?: "failed";
  /** What the driver said; defaults to the cause's message. */
  detail?: string;
  /** The server's name in the advice: `"PostgreSQL"`. @default the `store` */
  server?: string;
}

/** The operation kept losing races with concurrent writers (a claim against deletes) and gave up. */
export interface StoreContention extends StoreErrorBase {
  reason: "contention";
}

/** A connection failed inside a store transaction (`effectOnce`); `during` says where, and what that leaves. */
export interface StoreConnectionLost extends StoreErrorBase {
  reason: "connection-lost";
  /** `"while the effect ran; nothing was committed"`. */
  during: string;
  /** The server's name: `"PostgreSQL"`. @default the `store` */
  server?: string;
}

/** A tool ran, but its outcome could not be written before the harness's save budget ran out. */
export interface StoreOutcomeUnsaved extends StoreErrorBase {
  reason: "outcome-unsaved";
  /** The tool's name. */
  tool: string;
  /** The attempt that ran. */
  attempt: number;
  /** The cause, described for the message (`name: message`). */
  detail: string;
}

/** What a `StoreError` is made from: which store and operation, and which of the ways a store fails it was. */
export type StoreErrorData = StoreFailure | StoreContention | StoreConnectionLost | StoreOutcomeUnsaved;

type Positional = [string, string, string | undefined, string, ErrorOptions?];

/**
 * A store's server failed or could not be reached during an operation (a dropped connection, a timeout, a server
 * error). Whether a write was applied before the failure is unknown to this call, but every store operation is
 * conditional, so calling again is safe: it sees what was applied. `cause` is the driver's error.
 *
 * @example throw new StoreError({ store: "dynamodb", operation: "claim", key, cause: error })
 */
export class StoreError extends IdemkeyError implements RetryHints {
  override name = "StoreError" as const;
  /** The engine: `"postgres"`, `"redis"`. */
  readonly store: string;
  /** The operation that failed: `claim`, `update`, `effectOnce`, ... */
  readonly operation: string;
  /** The key the operation was about, when there was one. */
  readonly key: string | undefined;
  /** Worth retrying once the server is reachable again. */
  readonly retryable = true;

  constructor(data: StoreErrorData);
  /**
   * @deprecated Pass one object, `new StoreError({ store, operation, key, cause })`, and the class writes the
   * message. This form, which takes the message as text, keeps working.
   */
  constructor(
    store: string,
    operation: string,
    key: string | undefined,
    message: string,
    options?: ErrorOptions,
  );
  constructor(...args: [StoreErrorData] | Positional) {
    const [first] = args;
    if (typeof first === "object" && first !== null) {
      super(compose(first), "cause" in first ? { cause: first.cause } : undefined);
      this.store = first.store;
      this.operation = first.operation;
      this.key = first.key;
    } else {
      const [store, operation, key, message, options] = args as Positional;
      super(message, options);
      this.store = store;
      this.operation = operation;
      this.key = key;
    }
  }
}
brand(StoreError, "StoreError");

function compose(data: StoreErrorData): string {
  const about = data.key === undefined ? "" : ` of key ${JSON.stringify(data.key)}`;
  switch (data.reason) {
    case "contention":
      return `${data.store} store: ${data.operation}${about} kept losing races with concurrent deletes; try again`;
    case "connection-lost":
      return (
        `${data.operation}: the connection to ${data.server ?? data.store} failed ${data.during}. Call again with ` +
        "the same key: it replays the saved result if the effect committed and runs it if not. " +
        `(${causeText(data.cause)})`
      );
    case "outcome-unsaved":
      return (
        `The tool "${data.tool}" ran (attempt ${data.attempt}), but its outcome could not be recorded before the ` +
        `save budget ran out; the key stays locked until its lease lapses. Cause: ${data.detail}`
      );
    default:
      return (
        `${data.store} store: ${data.operation}${about} failed: ${sentence(data.detail ?? causeText(data.cause))} ` +
        `It may or may not have been applied; calling again is safe once ${data.server ?? data.store} answers.`
      );
  }
}

/** `text` ended as a sentence: a period added unless it ends one already (ioredis's words do). */
function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

function causeText(cause: unknown): string {
  return (cause as Error | undefined)?.message ?? String(cause);
}
