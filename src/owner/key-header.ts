export const MAX_KEY_LENGTH = 255;

export type KeyHeader =
  | { readonly ok: true; readonly key: string }
  | { readonly ok: false; readonly reason: "missing" | "invalid"; readonly detail: string };

/**
 * Reads the `Idempotency-Key` field values of one request. The IETF draft makes the key an RFC 8941 sf-string
 * (`"abc"`), most clients send it bare (`abc`); both give the key `abc`. Refused: an empty key, one longer than
 * 255 characters, one that is not printable ASCII, sf-string parameters or trailing text, and a field sent twice.
 *
 * HTTP joins repeated fields with a comma, and the Fetch `Headers` that Hono sees cannot undo that, so a bare key
 * may not contain a comma (send such a key quoted); Node's frameworks pass the fields apart and are checked as well.
 */
export function parseKeyHeader(fields: readonly string[] | undefined): KeyHeader {
  if (fields === undefined || fields.length === 0) {
    return { ok: false, reason: "missing", detail: "This request needs an Idempotency-Key header." };
  }
  if (fields.length > 1) return invalid("Send the Idempotency-Key header once; it was sent more than once.");
  const value = fields[0]!.replace(/^[ \t]+|[ \t]+$/g, "");
  const parsed = value.startsWith('"') ? parseSfString(value) : parseBare(value);
  if (!parsed.ok) return parsed;
  if (parsed.key.length === 0)
    return invalid("The Idempotency-Key is empty; send a unique value such as a UUID.");
  if (parsed.key.length > MAX_KEY_LENGTH) {
    return invalid(
      `The Idempotency-Key is ${parsed.key.length} characters long; the limit is ${MAX_KEY_LENGTH}.`,
    );
  }
  return parsed;
}

function parseBare(value: string): KeyHeader {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code === 0x2c) {
      return invalid(
        "The Idempotency-Key contains a comma: the header was sent more than once, or a key with a comma must be " +
          'sent as a quoted string ("...").',
      );
    }
    if (code < 0x20 || code > 0x7e) return notPrintable(i);
  }
  return { ok: true, key: value };
}

function parseSfString(value: string): KeyHeader {
  let key = "";
  for (let i = 1; i < value.length; i++) {
    const char = value[i]!;
    const code = value.charCodeAt(i);
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
    } else if (code < 0x20 || code > 0x7e) {
      return notPrintable(i);
    } else {
      key += char;
    }
  }
  return invalid("The quoted Idempotency-Key has no closing quote.");
}

function notPrintable(index: number): KeyHeader {
  return invalid(`The Idempotency-Key has a character that is not printable ASCII at position ${index}.`);
}

function invalid(detail: string): KeyHeader {
  return { ok: false, reason: "invalid", detail };
}
