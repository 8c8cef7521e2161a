import { createHash } from "node:crypto";
import { canonicalize } from "../key/canonicalize.js";

/**
 * A request body as an adapter has it: the raw bytes (Hono, Fastify, Express without a body parser) or the value
 * a body parser made of them (Express after `express.json()` and the like).
 */
export type RequestBody = { readonly bytes: Uint8Array } | { readonly parsed: unknown };

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * What a key is claimed for: lowercase hex SHA-256 over the method, the request target (path and query) and the
 * body, each framed as `<byte length>:<bytes>,` after the tag `idemkey-http-v1`, so no two requests share a framing.
 * A JSON body (a JSON content type that parses) is hashed in RFC 8785 canonical form, so that member order and
 * whitespace do not make a retry a different request; any other body is hashed as its raw bytes.
 */
export function requestFingerprint(
  method: string,
  target: string,
  contentType: string | undefined,
  body: RequestBody,
): string {
  const hash = createHash("sha256");
  const field = (bytes: Uint8Array) => {
    hash.update(`${bytes.byteLength}:`);
    hash.update(bytes);
    hash.update(",");
  };
  field(encoder.encode("idemkey-http-v1"));
  field(encoder.encode(method.toUpperCase()));
  field(encoder.encode(target));
  const [kind, bytes] = bodyForm(contentType, body);
  field(encoder.encode(kind));
  field(bytes);
  return hash.digest("hex");
}

function bodyForm(contentType: string | undefined, body: RequestBody): ["json" | "raw", Uint8Array] {
  if ("parsed" in body) {
    const { parsed } = body;
    if (parsed instanceof Uint8Array) return bodyForm(contentType, { bytes: parsed });
    if (typeof parsed === "string") return bodyForm(contentType, { bytes: encoder.encode(parsed) });
    const canonical = tryCanonical(parsed);
    // A parsed body that is not JSON (a class instance from a custom parser) has no stable form to hash.
    if (canonical === undefined)
      throw new TypeError("the parsed request body cannot be put in canonical JSON form");
    return ["json", encoder.encode(canonical)];
  }
  if (contentType !== undefined && JSON_TYPE.test(contentType) && body.bytes.byteLength > 0) {
    const canonical = tryCanonical(parseJson(body.bytes));
    if (canonical !== undefined) return ["json", encoder.encode(canonical)];
  }
  return ["raw", body.bytes];
}

const NOT_JSON = Symbol("not json");

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch {
    return NOT_JSON;
  }
}

function tryCanonical(value: unknown): string | undefined {
  if (value === NOT_JSON) return undefined;
  try {
    return canonicalize(value);
  } catch {
    return undefined;
  }
}
