import { IdemkeyError } from "../../errors/idemkey-error.js";

/**
 * The idempotency key a tool call carried in its `_meta` is unusable: not a string, empty, longer than 255
 * characters, or holding characters other than visible ASCII (or `"`, `,`, `\`, which an `Idempotency-Key` header
 * could not carry bare). `path` names the field. Send the key `idempotencyKey()` derives, or a UUID.
 */
export class InvalidIdempotencyKeyError extends IdemkeyError {
  override name = "InvalidIdempotencyKeyError" as const;
  /** Where the key was: `params._meta["dev.idemkey/idempotency-key"]`. */
  readonly path: string;
  readonly retryable = false;

  constructor(path: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.path = path;
  }
}
