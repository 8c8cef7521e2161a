import { brand } from "./brand.js";

/**
 * Base class of every error idemkey throws on purpose. Catch it to tell idemkey's errors from the tool's own; across
 * realms or copies of the package, test with `isIdemkeyError(error)` instead of `instanceof`.
 *
 * Each class composes its message from the data it is given and carries that data as fields. Those that know how a
 * retry would fare carry `RetryHints` (`retryable`, `retryAfterMs`, `noEffect`), which the harness reads.
 */
export class IdemkeyError extends Error {
  override name: string = "IdemkeyError";
}
brand(IdemkeyError, "IdemkeyError");
