import type { IncomingMessage, ServerResponse } from "node:http";
import { IdemkeyError } from "../errors/idemkey-error.js";

/** Headers on every answer: nothing cached, nothing framed, nothing sniffed, no referrer leaving the page. */
const COMMON: Record<string, string> = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-resource-policy": "same-origin",
};

/** The stable `type` URIs of the inspector's problems (RFC 9457), with their status and title. */
export const Problem = {
  notFound: [404, "not-found", "Not found"],
  methodNotAllowed: [405, "method-not-allowed", "Method not allowed"],
  hostRefused: [403, "host-refused", "Host not allowed"],
  tokenRequired: [403, "token-required", "Token required"],
  tokenInvalid: [403, "token-invalid", "Token invalid"],
  crossSite: [403, "cross-site", "Cross-site request refused"],
  readOnly: [403, "read-only", "The inspector is read-only"],
  badRequest: [400, "bad-request", "Bad request"],
  unsupportedMediaType: [415, "unsupported-media-type", "Content-Type must be application/json"],
  tooLarge: [413, "too-large", "Request body too large"],
  wrongState: [409, "wrong-state", "The call is not in the state this action needs"],
  storeUnavailable: [503, "store-unavailable", "The ledger's store did not answer"],
  tooManyStreams: [503, "too-many-streams", "Too many live streams open"],
  internal: [500, "internal", "Internal error"],
} as const satisfies Record<string, readonly [number, string, string]>;
export type Problem = (typeof Problem)[keyof typeof Problem];

export const PROBLEM_BASE = "https://idemkey.dev/problems/inspector/";

export function sendProblem(
  res: ServerResponse,
  [status, slug, title]: Problem,
  detail: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): void {
  send(
    res,
    status,
    "application/problem+json",
    JSON.stringify({ type: PROBLEM_BASE + slug, title, status, detail, ...extra }),
    headers,
  );
}

export function sendJson(res: ServerResponse, body: unknown, status = 200): void {
  send(res, status, "application/json; charset=utf-8", JSON.stringify(body));
}

export function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, {
    ...COMMON,
    "content-type": type,
    "content-length": Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

/** A request body too big or not JSON; the handler answers with the problem it names. */
export class BodyError extends IdemkeyError {
  override name = "BodyError" as const;
  constructor(
    readonly problem: Problem,
    message: string,
  ) {
    super(message);
  }
}

/** Reads a JSON object body of at most `limit` bytes. */
export async function readJson(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyError(Problem.tooLarge, `The body is larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  let body: unknown;
  try {
    body = text === "" ? {} : JSON.parse(text);
  } catch (error) {
    throw new BodyError(Problem.badRequest, `The body is not JSON: ${(error as Error).message}`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new BodyError(Problem.badRequest, "The body must be a JSON object");
  }
  return body as Record<string, unknown>;
}
