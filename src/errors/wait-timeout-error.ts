import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";

/**
 * A call waited longer than allowed for another holder of its key: a call running in another process
 * (`state: "pending"`, bounded by the harness's `wait.timeoutMs`) or a person's decision
 * (`state: "awaiting_approval"`, bounded by `approvalTimeoutMs`). Nothing was run; call again later with the same
 * arguments and the call picks up where the ledger is.
 */
export class WaitTimeoutError extends IdemkeyError {
  override name = "WaitTimeoutError" as const;
  readonly key: string;
  /** The state the ledger record was still in. */
  readonly state: string;
  readonly waitedMs: number;

  constructor(key: string, state: string, waitedMs: number, options?: ErrorOptions) {
    const what =
      state === "awaiting_approval"
        ? "an approval decision"
        : "the call running elsewhere under the same key";
    super(
      `Waited ${waitedMs} ms for ${what} (key ${key}, state ${state}); call again later with the same arguments`,
      options,
    );
    this.key = key;
    this.state = state;
    this.waitedMs = waitedMs;
  }
}
brand(WaitTimeoutError, "WaitTimeoutError");
