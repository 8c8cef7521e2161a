import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import type { RetryHints } from "./retry-hints.js";

interface LedgerStateBase extends ErrorOptions {
  /** The call's key. */
  key: string;
  /** The state the record is in; `undefined` when there is none. */
  state: string | undefined;
}

/** An action (`approve`, `deny`, `resolve`) met a record in another state than the one it applies to. */
export interface WrongState extends LedgerStateBase {
  reason: "wrong-state";
  /** The action, as a verb: `"approve"`. */
  action: string;
  /** The state the action applies to: `"awaiting_approval"`. */
  expected: string;
}

/** An action lost a race: the record changed between reading it and writing it. */
export interface StateChanged extends LedgerStateBase {
  reason: "changed";
  action: string;
}

/** A record's data cannot be read as a ledger record: not JSON, or not written by a version this idemkey reads. */
export interface UnreadableRecord extends LedgerStateBase {
  reason: "unreadable" | "unrecognised";
  /** The record's key in the store (with its prefix). */
  record: string;
  /** The ledger versions this idemkey reads. @default [1] */
  versions?: readonly number[];
}

/** A record in a ledger format newer than any this idemkey reads: written by a newer process of the fleet. */
export interface NewerRecord extends LedgerStateBase {
  reason: "newer";
  /** The record's key in the store (with its prefix). */
  record: string;
  /** The record's format. */
  format: number;
  /** The ledger versions this idemkey reads. */
  versions: readonly number[];
}

/** What a `LedgerStateError` is made from: the key, its record's state, and what did not fit. */
export type LedgerStateErrorData = WrongState | StateChanged | UnreadableRecord | NewerRecord;

type Positional = [string, string | undefined, string, ErrorOptions?];

/**
 * A ledger action does not apply to the record as it is: approving a call that is not awaiting approval,
 * resolving one whose outcome is known, acting on a key with no live record, or reading a record that idemkey did
 * not write. `state` is what the record is in (`undefined` when there is none).
 */
export class LedgerStateError extends IdemkeyError implements RetryHints {
  override name = "LedgerStateError" as const;
  readonly key: string;
  readonly state: string | undefined;
  readonly retryable = false;

  constructor(data: LedgerStateErrorData);
  /** @deprecated Pass one object, `new LedgerStateError({ key, state, reason, ... })`, and the class writes the message. */
  constructor(key: string, state: string | undefined, message: string, options?: ErrorOptions);
  constructor(...args: [LedgerStateErrorData] | Positional) {
    const [first] = args;
    if (typeof first === "object") {
      super(compose(first), "cause" in first ? { cause: first.cause } : undefined);
      this.key = first.key;
      this.state = first.state;
    } else {
      const [key, state, message, options] = args as Positional;
      super(message, options);
      this.key = key;
      this.state = state;
    }
  }
}
brand(LedgerStateError, "LedgerStateError");

function compose(data: LedgerStateErrorData): string {
  switch (data.reason) {
    case "wrong-state": {
      const is = data.state === undefined ? "has no live ledger record" : `is ${data.state}`;
      return `Cannot ${data.action} the call ${data.key}: it ${is}, not ${data.expected}`;
    }
    case "changed":
      return `Cannot ${data.action} the call ${data.key}: its record changed meanwhile`;
    case "unreadable":
      return `The ledger record ${data.record} has unreadable data`;
    case "unrecognised": {
      const versions = (data.versions ?? [1]).map((v) => `v${v}`).join(" or ");
      return `The record ${data.record} is not an idemkey ledger record (${versions})`;
    }
    case "newer":
      return (
        `The ledger record ${data.record} is in format v${data.format}, written by a newer idemkey; this one reads ` +
        `v${data.versions.join(" and v")}: upgrade this process, and let no process write a format before every ` +
        "process of the fleet reads it (docs/ledger-format.md)"
      );
  }
}
