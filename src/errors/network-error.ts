import { IdemkeyError } from "./idemkey-error.js";

/**
 * A keyed request got no answer (`idempotentFetch`): the connection was refused or reset, the name did not
 * resolve, the socket closed. Always retryable with the same key, which is what makes a retry safe. `noEffect` is
 * true only when the request cannot have been sent (refused, unresolvable, unreachable); a connection lost after
 * sending may have taken effect. `code` is the system error code when there is one (`ECONNRESET`).
 */
export class NetworkError extends IdemkeyError {
  override name = "NetworkError" as const;
  readonly code: string | undefined;
  readonly retryable = true;
  readonly noEffect: boolean;

  constructor(message: string, code: string | undefined, noEffect: boolean, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.noEffect = noEffect;
  }
}
