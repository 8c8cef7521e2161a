/**
 * Base class of every error idemkey throws on purpose. Catch it to tell idemkey's errors from the tool's own.
 */
export class IdemkeyError extends Error {
  override name: string = "IdemkeyError";
}
