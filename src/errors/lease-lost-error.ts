import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";

/**
 * A request's hold on its Idempotency-Key lapsed before its handler finished (lease renewals failed or came too
 * late), and another request may have taken the key over and run the handler too. This request's response was not
 * saved. Raise `leaseMs`, or look at the store's latency and availability.
 */
export class LeaseLostError extends IdemkeyError {
  override name = "LeaseLostError" as const;
  /** The Idempotency-Key whose lease was lost. */
  readonly key: string;

  constructor(key: string, options?: ErrorOptions) {
    super(
      `The lease on Idempotency-Key ${JSON.stringify(key)} lapsed before its handler finished, so its response was ` +
        "not saved and another request may have run it as well; raise leaseMs or check the store.",
      options,
    );
    this.key = key;
  }
}
brand(LeaseLostError, "LeaseLostError");
