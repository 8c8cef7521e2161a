/** A response the engine decided on; adapters write it as it is. */
export interface OwnerResponse {
  readonly status: number;
  /** Name and value pairs; a name may repeat. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Uint8Array;
}

/** The stable `type` URIs of the problems the middleware answers with (RFC 9457). */
export const ProblemType = {
  keyMissing: "https://idemkey.dev/problems/key-missing",
  keyInvalid: "https://idemkey.dev/problems/key-invalid",
  keyInFlight: "https://idemkey.dev/problems/key-in-flight",
  keyReused: "https://idemkey.dev/problems/key-reused",
  storeUnavailable: "https://idemkey.dev/problems/store-unavailable",
  responseNotSaved: "https://idemkey.dev/problems/response-not-saved",
  outcomeUnknown: "https://idemkey.dev/problems/outcome-unknown",
} as const;
export type ProblemType = (typeof ProblemType)[keyof typeof ProblemType];

const TITLES: Record<ProblemType, [number, string]> = {
  [ProblemType.keyMissing]: [400, "Idempotency-Key missing"],
  [ProblemType.keyInvalid]: [400, "Idempotency-Key invalid"],
  [ProblemType.keyInFlight]: [409, "Request with this Idempotency-Key in progress"],
  [ProblemType.keyReused]: [422, "Idempotency-Key reused for a different request"],
  [ProblemType.storeUnavailable]: [503, "Idempotency store unavailable"],
  [ProblemType.responseNotSaved]: [500, "Response to this Idempotency-Key not saved"],
  [ProblemType.outcomeUnknown]: [409, "Outcome of the request with this Idempotency-Key unknown"],
};

const encoder = new TextEncoder();

/** An RFC 9457 `application/problem+json` response. */
export function problem(
  type: ProblemType,
  detail: string,
  extraHeaders: readonly (readonly [string, string])[] = [],
): OwnerResponse {
  const [status, title] = TITLES[type];
  return {
    status,
    headers: [["content-type", "application/problem+json"], ...extraHeaders],
    body: encoder.encode(JSON.stringify({ type, title, status, detail })),
  };
}
