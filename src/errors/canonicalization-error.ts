import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";

/**
 * A value cannot be put in RFC 8785 canonical form without losing or confusing data: `NaN`, a BigInt, a `Map`,
 * a cycle, a lone surrogate, a class instance, and so on. `path` points at the value at fault (`$.items[3]`), and
 * `reason` says what is wrong with it.
 */
export class CanonicalizationError extends IdemkeyError {
  override name = "CanonicalizationError" as const;
  readonly path: string;
  readonly reason: string;

  constructor(path: string, reason: string, options?: ErrorOptions) {
    super(`${path}: ${reason}`, options);
    this.path = path;
    this.reason = reason;
  }
}
brand(CanonicalizationError, "CanonicalizationError");
