import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import type { RetryHints } from "./retry-hints.js";

export interface HttpStatusErrorOptions extends ErrorOptions {
  retryable: boolean;
  retryAfterMs?: number | undefined;
  noEffect: boolean;
  replayed: boolean;
}

/**
 * The owner answered a keyed request with an error status (`idempotentFetch`). The harness reads `retryable`,
 * `retryAfterMs` and `noEffect` from it: a 409 (key in flight) and a 5xx are retried with the same key, any other
 * 4xx is final, and so is a replayed answer (`Idempotent-Replayed: true`), which is the saved outcome of the first
 * attempt. `body` is the response body as text, for its problem details.
 */
export class HttpStatusError extends IdemkeyError implements RetryHints {
  override name = "HttpStatusError" as const;
  readonly status: number;
  readonly url: string;
  readonly headers: Headers;
  readonly body: string;
  /** Whether the same request with the same key may succeed later. */
  readonly retryable: boolean;
  /** The owner's `Retry-After`, in milliseconds, bounded by `maxRetryAfterMs`. */
  readonly retryAfterMs: number | undefined;
  /** A definitive rejection (a 4xx that is not a replay): this request took no effect. */
  readonly noEffect: boolean;
  /** The answer was the owner's saved response to an earlier attempt with this key. */
  readonly replayed: boolean;

  constructor(response: Response, body: string, options: HttpStatusErrorOptions) {
    const { retryable, retryAfterMs, noEffect, replayed, ...errorOptions } = options;
    super(
      `${response.url || "the request"} answered ${response.status}${replayed ? " (replayed)" : ""}: ` +
        `${summary(body)}${retryable ? "; it may be retried with the same key" : ""}`,
      errorOptions,
    );
    this.status = response.status;
    this.url = response.url;
    this.headers = response.headers;
    this.body = body;
    this.retryable = retryable;
    this.retryAfterMs = retryAfterMs;
    this.noEffect = noEffect;
    this.replayed = replayed;
  }
}
brand(HttpStatusError, "HttpStatusError");

/** An RFC 9457 problem's title and detail when the body is one, else the start of the body. */
function summary(body: string): string {
  try {
    const problem = JSON.parse(body) as { title?: unknown; detail?: unknown };
    const parts = [problem.title, problem.detail].filter((p): p is string => typeof p === "string");
    if (parts.length > 0) return parts.join(": ");
  } catch {
    // Not JSON: show the text itself.
  }
  return body.length > 200 ? `${body.slice(0, 200)}...` : body || "(empty body)";
}
