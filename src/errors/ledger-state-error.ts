import { IdemkeyError } from "./idemkey-error.js";

/**
 * A ledger action does not apply to the record as it is: approving a call that is not awaiting approval,
 * resolving one whose outcome is known, acting on a key with no live record, or reading a record that idemkey did
 * not write. `state` is what the record is in (`undefined` when there is none).
 */
export class LedgerStateError extends IdemkeyError {
  override name = "LedgerStateError" as const;
  readonly key: string;
  readonly state: string | undefined;
  readonly retryable = false;

  constructor(key: string, state: string | undefined, message: string, options?: ErrorOptions) {
    super(message, options);
    this.key = key;
    this.state = state;
  }
}
