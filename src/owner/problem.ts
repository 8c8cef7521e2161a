/** A response the engine decided on; adapters write it as it is. */
export interface OwnerResponse {
  readonly status: number;
  /** Name and value pairs; a name may repeat. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Uint8Array;
}

/**
 * The stable identities of the problems the middleware answers with (RFC 9457). They are the `type` URIs sent
 * unless `problemTypeBase` is set, in which case `type` is that base followed by the last segment (`key-missing`).
 */
export const ProblemType = {
  keyMissing: "https://idemkey.dev/problems/key-missing",
  keyInvalid: "https://idemkey.dev/problems/key-invalid",
  keyInFlight: "https://idemkey.dev/problems/key-in-flight",
  keyReused: "https://idemkey.dev/problems/key-reused",
  storeUnavailable: "https://idemkey.dev/problems/store-unavailable",
  responseNotSaved: "https://idemkey.dev/problems/response-not-saved",
  bodyTooLarge: "https://idemkey.dev/problems/body-too-large",
  bodyInvalid: "https://idemkey.dev/problems/body-invalid",
  outcomeUnknown: "https://idemkey.dev/problems/outcome-unknown",
} as const;
export type ProblemType = (typeof ProblemType)[keyof typeof ProblemType];

/**
 * Status, title, and whether the answer is final: a final answer is the same however often the request is sent,
 * so it carries `x-should-retry: false` (which Stainless-generated SDKs and stripe-node honour, as they otherwise
 * retry 409 and 5xx); the two that a retry with the same key can get past carry `x-should-retry: true`.
 */
const TITLES: Record<ProblemType, [number, string, boolean]> = {
  [ProblemType.keyMissing]: [400, "Idempotency-Key missing", true],
  [ProblemType.keyInvalid]: [400, "Idempotency-Key invalid", true],
  [ProblemType.keyInFlight]: [409, "Request with this Idempotency-Key in progress", false],
  [ProblemType.keyReused]: [422, "Idempotency-Key reused for a different request", true],
  [ProblemType.storeUnavailable]: [503, "Idempotency store unavailable", false],
  [ProblemType.responseNotSaved]: [500, "Response to this Idempotency-Key not saved", true],
  [ProblemType.bodyTooLarge]: [413, "Request body too large for an Idempotency-Key", true],
  [ProblemType.bodyInvalid]: [400, "Request body has no single JSON value", true],
  // Final: the key stays refused whatever is sent with it, until its record expires.
  [ProblemType.outcomeUnknown]: [409, "Outcome of the request with this Idempotency-Key unknown", true],
};

/** The header that tells a client whether to retry; see `TITLES`. */
export const SHOULD_RETRY = "x-should-retry";

const encoder = new TextEncoder();

export type Problem = (
  type: ProblemType,
  detail: string,
  extraHeaders?: readonly (readonly [string, string])[],
) => OwnerResponse;

/**
 * Makes the RFC 9457 `application/problem+json` responses of one middleware: `typeBase` replaces idemkey's own
 * URIs, `docsUrl` adds `Link: <docsUrl>; rel="describedby"` (the draft's pointer to the resource's idempotency docs).
 */
export function problems(typeBase?: string, docsUrl?: string): Problem {
  const link: (readonly [string, string])[] =
    docsUrl === undefined ? [] : [["link", `<${docsUrl}>; rel="describedby"`]];
  return (type, detail, extraHeaders = []) => {
    const [status, title, final] = TITLES[type];
    const uri = typeBase === undefined ? type : `${typeBase}${type.slice(type.lastIndexOf("/") + 1)}`;
    return {
      status,
      headers: [
        ["content-type", "application/problem+json"],
        [SHOULD_RETRY, String(!final)],
        ...link,
        ...extraHeaders,
      ],
      body: encoder.encode(JSON.stringify({ type: uri, title, status, detail })),
    };
  };
}

/** A problem with idemkey's own `type` URIs and no `Link`. */
export const problem: Problem = problems();
