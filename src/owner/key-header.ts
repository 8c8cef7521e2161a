import { KEY_RULE, keyProblem } from "../key/key-rule.js";

export type KeyHeader =
  | { readonly ok: true; readonly key: string }
  | { readonly ok: false; readonly reason: "missing" | "invalid"; readonly detail: string };

/**
 * Reads the `Idempotency-Key` field values of one request. The IETF draft makes the key an RFC 8941 sf-string
 * (`"abc"`), most clients send it bare (`abc`); both give the key `abc`. The key itself follows idemkey's one rule
 * (`key/key-rule.ts`: 1 to 255 printable ASCII characters). Refused besides: sf-string parameters or trailing text,
 * and a field sent twice.
 *
 * HTTP joins repeated fields with a comma, and the Fetch `Headers` that Hono sees cannot undo that, so a bare key
 * may not contain a comma (send such a key quoted); Node's frameworks pass the fields apart and are checked as well.
 * That comma is the header's only difference from the rule: a bare value is read as leniently as that allows.
 */
export function parseKeyHeader(fields: readonly string[] | undefined): KeyHeader {
  if (fields === undefined || fields.length === 0) {
    return { ok: false, reason: "missing", detail: "This request needs an Idempotency-Key header." };
  }
  if (fields.length > 1) return invalid("Send the Idempotency-Key header once; it was sent more than once.");
  const value = fields[0]!.replace(/^[ \t]+|[ \t]+$/g, "");
  const parsed = value.startsWith('"') ? parseSfString(value) : parseBare(value);
  if (!parsed.ok) return parsed;
  const problem = keyProblem(parsed.key);
  if (problem === "is empty")
    return invalid("The Idempotency-Key is empty; send a unique value such as a UUID.");
  if (problem !== undefined) return invalid(`The Idempotency-Key ${problem}.`);
  return parsed;
}

/** The rule as the middleware's problem answers state it. */
export const KEY_HEADER_RULE = `Send one key of ${KEY_RULE}, bare or as a quoted string.`;

function parseBare(value: string): KeyHeader {
  if (value.includes(",")) {
    return invalid(
      "The Idempotency-Key contains a comma: the header was sent more than once, or a key with a comma must be " +
        'sent as a quoted string ("...").',
    );
  }
  return { ok: true, key: value };
}

function parseSfString(value: string): KeyHeader {
  let key = "";
  for (let i = 1; i < value.length; i++) {
    const char = value[i]!;
    if (char === "\\") {
      const next = value[++i];
      if (next !== '"' && next !== "\\") {
        return invalid('The quoted Idempotency-Key has a backslash that escapes neither \\ nor ".');
      }
      key += next;
    } else if (char === '"') {
      const rest = value.slice(i + 1).trimStart();
      if (rest === "") return { ok: true, key };
      if (rest.startsWith(","))
        return invalid("Send the Idempotency-Key header once; it was sent more than once.");
      return invalid(
        "The quoted Idempotency-Key is followed by parameters or other text; send the key alone.",
      );
    } else {
      // sf-string's alphabet is the key rule's, so what is not printable is reported by the rule, in the key.
      key += char;
    }
  }
  return invalid("The quoted Idempotency-Key has no closing quote.");
}

function invalid(detail: string): KeyHeader {
  return { ok: false, reason: "invalid", detail };
}
