import type { OutgoingHttpHeaders } from "node:http";

type HeaderValue = string | number | readonly string[] | undefined;

/** Node's outgoing headers (`res.getHeaders()`) as name and value pairs, one pair per value of a repeated header. */
export function headerPairs(headers: OutgoingHttpHeaders | Record<string, HeaderValue>): [string, string][] {
  const pairs: [string, string][] = [];
  for (const name in headers) if (Object.hasOwn(headers, name)) addHeaderPairs(pairs, name, headers[name]);
  return pairs;
}

/** Adds `name`'s pairs to `pairs`: one per value of a repeated header, none for `undefined`. */
export function addHeaderPairs(pairs: [string, string][], name: string, value: HeaderValue): void {
  if (value === undefined) return;
  if (Array.isArray(value)) for (const item of value as readonly string[]) pairs.push([name, item]);
  else pairs.push([name, String(value)]);
}

/**
 * The `Idempotency-Key` field values of a Node request, one per field line: Node's `headers` joins repeated fields
 * with a comma, which would hide a repeated key. Read from `rawHeaders`, which every Node request has (Fastify's
 * `inject` too): `headersDistinct` gives the same values but builds an array for every header of the request on
 * first use, ~4 µs of a keyed Express request.
 */
export function keyFieldsOf(request: { readonly rawHeaders: readonly string[] }): string[] | undefined {
  let fields: string[] | undefined;
  const raw = request.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    // The length first: most names are not 15 characters long, and those need no lowercase copy.
    if (name.length !== KEY_NAME.length || name.toLowerCase() !== KEY_NAME) continue;
    fields ??= [];
    fields.push(raw[i + 1]!);
  }
  return fields;
}

const KEY_NAME = "idempotency-key";
