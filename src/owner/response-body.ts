import type { OwnerResponse } from "./problem.js";

/** Statuses whose responses have no body; a Fetch `Response` refuses one, even empty. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** A Fetch `Response` for runtimes built on it (Hono). */
export function toFetchResponse(response: OwnerResponse): Response {
  const headers = new Headers();
  for (const [name, value] of response.headers) headers.append(name, value);
  const body = NULL_BODY.has(response.status) || response.body.byteLength === 0 ? null : response.body;
  return new Response(body, { status: response.status, headers });
}

export function concat(chunks: readonly Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
