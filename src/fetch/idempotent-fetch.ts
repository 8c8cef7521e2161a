import { fetchFailureCode, fetchNeverSent, isFetchNetworkFailure } from "../errors/fetch-failure.js";
import { HttpStatusError } from "../errors/http-status-error.js";
import { IdempotencyConflictError } from "../errors/idempotency-conflict-error.js";
import { NetworkError } from "../errors/network-error.js";
import { canonicalize } from "../key/canonicalize.js";
import { bareKeyProblem, keyProblem } from "../key/key-rule.js";
import { numberOption } from "../options/number-option.js";
import { parseRetryAfter } from "./retry-after.js";

/** What `idempotentFetch` needs of the harness's tool context (`ToolContext`). */
export interface KeyContext {
  readonly idempotencyKey: string;
  readonly signal?: AbortSignal | undefined;
}

/** `RequestInit` whose `body` may also be a plain object or array, sent as canonical JSON. */
export interface IdempotentRequestInit extends Omit<RequestInit, "body"> {
  body?: RequestInit["body"] | Record<string, unknown> | readonly unknown[];
}

export type IdempotentFetch = (
  input: string | URL | Request,
  init: IdempotentRequestInit | undefined,
  ctx: KeyContext,
) => Promise<Response>;

export interface IdempotentFetchOptions {
  /**
   * Sends the key as an RFC 8941 sf-string (`Idempotency-Key: "ab12..."`), the form the IETF draft
   * (draft-ietf-httpapi-idempotency-key-header) specifies. A strict Structured Fields parser reads a bare hex key as
   * a Token, or refuses it when it starts with a digit, so bare is not the default. Owners that take the field's
   * text as it is (Stripe, most hand-written servers) keep the quotes as part of the key, which is the same on every
   * retry, so they dedupe it just as well; idemkey's middleware takes both forms as one key. Set `false` for an
   * owner that refuses quotes (one that allows only `[A-Za-z0-9-]` in keys) or that must see the key in the very
   * form it finds in `_meta` or a database column; a key that cannot travel bare (a space, `"`, `,` or `\`) is then
   * refused with a `TypeError` before anything is sent.
   * @default true
   */
  quoted?: boolean;
  /**
   * The longest `Retry-After` honoured, in milliseconds; a longer one is cut to this, so that an owner cannot park
   * the agent for an hour.
   * @default 60_000
   */
  maxRetryAfterMs?: number;
  /**
   * The `fetch` to wrap (a mock, undici's with a dispatcher, an instrumented one).
   * @default globalThis.fetch, looked up on each call
   */
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
}

/**
 * Makes an `idempotentFetch` with these options, validated once.
 *
 * @example const fetchOnce = createIdempotentFetch({ quoted: false, maxRetryAfterMs: 10_000 });
 */
// `create`: `idempotentFetch` already names the default instance (see createHarness for the naming rule).
export function createIdempotentFetch(options: IdempotentFetchOptions = {}): IdempotentFetch {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("createIdempotentFetch(options) needs an options object");
  }
  const quoted = options.quoted ?? true;
  const maxRetryAfterMs = numberOption("options.maxRetryAfterMs", options.maxRetryAfterMs, 60_000, {
    infinite: true,
  });
  const fetchImpl = options.fetch;
  if (typeof quoted !== "boolean")
    throw new TypeError(`options.quoted must be a boolean, got ${typeof quoted}`);
  if (fetchImpl !== undefined && typeof fetchImpl !== "function") {
    throw new TypeError(`options.fetch must be a function, got ${typeof fetchImpl}`);
  }

  return async function idempotentFetch(input, init, ctx) {
    const key = checkKey(ctx, quoted);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    // The harness's key wins over one set by hand: the model must never choose or change it.
    headers.set("idempotency-key", quoted ? `"${key.replace(/[\\"]/g, "\\$&")}"` : key);
    let body = init?.body;
    if (isJsonContainer(body)) {
      body = canonicalize(body);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
    }
    const signal = combine(init?.signal ?? undefined, ctx.signal);
    const request: RequestInit = {
      ...init,
      headers,
      body: body as RequestInit["body"],
      signal: signal ?? null,
    };

    let response: Response;
    try {
      response = await (fetchImpl ?? globalThis.fetch)(input, request);
    } catch (error) {
      // An abort is the caller's decision, and any other TypeError is a bad URL or init: pass them on.
      if (signal?.aborted || (error instanceof TypeError && !isFetchNetworkFailure(error))) throw error;
      throw networkError(error);
    }
    return classify(response, key, maxRetryAfterMs);
  };
}

/**
 * `fetch` for a `keyed` tool: sends `ctx.idempotencyKey` as the `Idempotency-Key` header (quoted; see `quoted`), passes
 * `ctx.signal`, sends a plain-object or array `body` as RFC 8785 canonical JSON, and turns the answer into what
 * the harness's retries understand. A 2xx or 3xx resolves with the `Response`. Otherwise it throws:
 * - 409 (the key is in flight) and 5xx: `HttpStatusError`, retryable with the same key after its `Retry-After`;
 * - 422 (the key was used for another request): `IdempotencyConflictError`, never retried;
 * - any answer with `Idempotent-Replayed: true`: `HttpStatusError`, final (the first attempt's saved outcome);
 * - other 4xx: `HttpStatusError`, final, with `noEffect` (408 and 429 are retryable);
 * - no answer: `NetworkError`, retryable, with `noEffect` only when nothing can have been sent.
 *
 * @example
 * const createCharge = defineTool({
 *   name: "createCharge", effect: "keyed",
 *   run: async (args, ctx) => (await idempotentFetch(`${api}/charges`, { method: "POST", body: args }, ctx)).json(),
 * });
 */
export const idempotentFetch: IdempotentFetch = createIdempotentFetch();

async function classify(response: Response, key: string, maxRetryAfterMs: number): Promise<Response> {
  const { status } = response;
  if (status < 400) return response;
  const replayed = /^(?:true|\?1)$/i.test(response.headers.get("idempotent-replayed")?.trim() ?? "");
  const retryAfterMs = parseRetryAfter(response.headers.get("retry-after"), maxRetryAfterMs);
  const body = await response.text().catch(() => "");
  const fail = (retryable: boolean, noEffect: boolean) =>
    new HttpStatusError(response, body, { retryable, noEffect, replayed, retryAfterMs });
  if (replayed) throw fail(false, false);
  // Stainless's and stripe-node's signal, which idemkey's middleware sends on its final answers.
  const final = /^false$/i.test(response.headers.get("x-should-retry")?.trim() ?? "");
  if (status === 422) {
    throw new IdempotencyConflictError({ key, by: "http", url: response.url, cause: fail(false, true) });
  }
  if (status === 409 || status >= 500) throw fail(!final, false);
  if (status === 408 || status === 429) throw fail(!final, true);
  throw fail(false, true);
}

function networkError(error: unknown): NetworkError {
  const reason =
    error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : "";
  return new NetworkError({
    code: fetchFailureCode(error),
    noEffect: fetchNeverSent(error),
    detail: reason,
    cause: error,
  });
}

function checkKey(ctx: KeyContext, quoted: boolean): string {
  if (typeof ctx !== "object" || ctx === null) {
    throw new TypeError("idempotentFetch(input, init, ctx) needs the tool context as ctx");
  }
  const key = ctx.idempotencyKey;
  if (typeof key !== "string") {
    throw new TypeError(`ctx.idempotencyKey must be a string (the harness's key), got ${typeof key}`);
  }
  // Sent bare, a comma or an edge space would reach the owner as another key: refuse it here, before sending.
  const problem = quoted ? keyProblem(key) : bareKeyProblem(key);
  if (problem !== undefined) {
    throw new TypeError(`ctx.idempotencyKey ${problem}; pass the key the harness gave the tool`);
  }
  return key;
}

function isJsonContainer(body: unknown): body is Record<string, unknown> | unknown[] {
  if (typeof body !== "object" || body === null) return false;
  if (Array.isArray(body)) return true;
  const proto = Object.getPrototypeOf(body);
  return proto === Object.prototype || proto === null;
}

function combine(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  if (!a || !b || a === b) return a ?? b;
  return AbortSignal.any([a, b]);
}
