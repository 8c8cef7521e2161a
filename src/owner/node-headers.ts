import type { OutgoingHttpHeaders } from "node:http";

/** Node's outgoing headers (`res.getHeaders()`) as name and value pairs, one pair per value of a repeated header. */
export function headerPairs(
  headers: OutgoingHttpHeaders | Record<string, string | number | readonly string[] | undefined>,
): [string, string][] {
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) pairs.push([name, item]);
    else pairs.push([name, String(value)]);
  }
  return pairs;
}

/**
 * The `Idempotency-Key` field values of a Node request, one per field line: Node's `headers` joins repeated fields
 * with a comma, which would hide a repeated key. `headersDistinct` where Node provides it, else `rawHeaders` (which
 * Fastify's `inject` provides).
 */
export function keyFieldsOf(request: {
  readonly headersDistinct?: Record<string, string[] | undefined>;
  readonly rawHeaders: readonly string[];
}): string[] | undefined {
  if (request.headersDistinct) return request.headersDistinct["idempotency-key"];
  let fields: string[] | undefined;
  const raw = request.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== "idempotency-key") continue;
    fields ??= [];
    fields.push(raw[i + 1]!);
  }
  return fields;
}
