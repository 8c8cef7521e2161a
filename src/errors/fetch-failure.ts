/**
 * `fetch`'s failures as each runtime throws them. Node (undici), Bun and Deno all throw a `TypeError` when no answer
 * came, as they do for a bad URL or init, and each says "network" its own way (measured on Node 20.19, Bun 1.4.5 and
 * Deno 2.9.6; the shapes are the fixtures of test/fetch/network-failure.test.ts, which also runs on Bun and Deno):
 * - Node: "fetch failed", caused by the socket's or the resolver's error and its code (`UND_ERR_SOCKET`,
 *   `ECONNREFUSED`, `ENOTFOUND`);
 * - Bun: the system's code on the `TypeError` itself (`ECONNRESET`, `ECONNREFUSED`, `ENOTFOUND`), with no cause;
 * - Deno: "fetch failed", caused by an `Error` with no code ("... client error (SendRequest): connection closed
 *   before message completed").
 * A bad URL is none of these: its code (Node's cause, Bun's own) is `ERR_INVALID_URL`, and Deno's has no cause.
 */

/** Node's codes for a bad argument (`ERR_INVALID_URL`, `ERR_INVALID_ARG_TYPE`): a bug in the call, not the network. */
const BAD_INPUT = /^ERR_INVALID_/;

/**
 * Whether `error` is `fetch`'s failure to get an answer: a lost reply or a failed connection, which the same key may
 * retry (it may have reached the owner), where any other `TypeError` is a bad URL or init that fails again the same
 * way. When unsure it says yes: retrying a bad call costs a few attempts, and calling a lost reply final fails a
 * step that one retry would have finished.
 */
export function isFetchNetworkFailure(error: unknown): error is TypeError {
  if (!(error instanceof TypeError)) return false;
  const own = codeOf(error);
  if (own !== undefined) return !BAD_INPUT.test(own);
  const { cause } = error as { cause?: unknown };
  if (typeof cause !== "object" || cause === null) return false;
  const code = codeOf(cause);
  return code === undefined || !BAD_INPUT.test(code);
}

/** Deno's words for a failure to connect (hyper's `Connect` kind): no byte of the request was sent. */
const DENO_CONNECT = /client error \(Connect\)/;

/**
 * Whether a network failure of `fetch` happened before any of the request was sent: refused, unresolvable or
 * unreachable (by the code along the cause chain, Node's and Bun's), or Deno's failure to connect, which has no
 * code. Such a failure certainly had no effect.
 */
export function fetchNeverSent(error: unknown): boolean {
  const code = fetchFailureCode(error);
  if (code !== undefined) return NEVER_SENT.has(code);
  const { cause } = error as { cause?: unknown };
  return cause instanceof Error && DENO_CONNECT.test(cause.message);
}

/** Codes of failures before anything was sent: the owner cannot have done anything. */
const NEVER_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** The first system error code along the cause chain (undici nests it: TypeError -> Error { code }; Bun does not). */
export function fetchFailureCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; typeof e === "object" && e !== null && depth < 5; depth++) {
    const code = codeOf(e);
    if (code !== undefined) return code;
    const nested = (e as { errors?: unknown }).errors;
    if (Array.isArray(nested) && nested.length > 0) e = nested[0];
    else e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function codeOf(error: object): string | undefined {
  const { code } = error as { code?: unknown };
  return typeof code === "string" ? code : undefined;
}
