import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import type { RetryHints } from "./retry-hints.js";

/** What a `NetworkError` is made from. */
export interface NetworkErrorData extends ErrorOptions {
  /** The system error code, when there is one: `"ECONNRESET"`. */
  code: string | undefined;
  /** The request cannot have been sent (refused, unresolvable, unreachable). */
  noEffect: boolean;
  /** The failure's own words, shown when there is no code. */
  detail?: string | undefined;
}

type Positional = [string, string | undefined, boolean, ErrorOptions?];

/**
 * A keyed request got no answer (`idempotentFetch`): the connection was refused or reset, the name did not
 * resolve, the socket closed. Always retryable with the same key, which is what makes a retry safe. `noEffect` is
 * true only when the request cannot have been sent (refused, unresolvable, unreachable); a connection lost after
 * sending may have taken effect. `code` is the system error code when there is one (`ECONNRESET`).
 */
export class NetworkError extends IdemkeyError implements RetryHints {
  override name = "NetworkError" as const;
  readonly code: string | undefined;
  readonly retryable = true;
  readonly noEffect: boolean;

  constructor(data: NetworkErrorData);
  /** @deprecated Pass one object, `new NetworkError({ code, noEffect, cause })`, and the class writes the message. */
  constructor(message: string, code: string | undefined, noEffect: boolean, options?: ErrorOptions);
  constructor(...args: [NetworkErrorData] | Positional) {
    const [first] = args;
    if (typeof first === "object") {
      const { code, noEffect, detail } = first;
      super(
        `The request got no answer (${code ?? (detail || "network error")}); ` +
          (noEffect ? "it was never sent." : "it may have taken effect: retry with the same key."),
        "cause" in first ? { cause: first.cause } : undefined,
      );
      this.code = code;
      this.noEffect = noEffect;
    } else {
      const [message, code, noEffect, options] = args as Positional;
      super(message, options);
      this.code = code;
      this.noEffect = noEffect;
    }
  }
}
brand(NetworkError, "NetworkError");
