import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";

/**
 * A response was larger than the middleware's `maxResponseBytes`, so it was sent to its client but not saved: its
 * key is marked done, and retries get a 500 problem instead of a replay. Raise `maxResponseBytes`, or make the
 * handler answer with less (a resource id and a `Location` to fetch it from).
 */
export class ResponseTooLargeError extends IdemkeyError {
  override name = "ResponseTooLargeError" as const;
  /** The Idempotency-Key of the request. */
  readonly key: string;
  /** The status of the response that was not saved. */
  readonly status: number;
  /** The `maxResponseBytes` it exceeded. */
  readonly limit: number;

  constructor(key: string, status: number, limit: number, options?: ErrorOptions) {
    super(
      `The ${status} response to Idempotency-Key ${JSON.stringify(key)} is larger than maxResponseBytes ` +
        `(${limit} bytes), so it was not saved and cannot be replayed; raise maxResponseBytes or answer with less.`,
      options,
    );
    this.key = key;
    this.status = status;
    this.limit = limit;
  }
}
brand(ResponseTooLargeError, "ResponseTooLargeError");
