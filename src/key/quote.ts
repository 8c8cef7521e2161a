import { Fault } from "./fault.js";

/**
 * Strings up to this length are scanned here; longer ones go to JSON.stringify, whose native scan wins once the cost
 * of calling into it is spread over enough characters (measured with `npm run bench key`).
 */
const HAND_QUOTED_LIMIT = 256;

/**
 * A JSON string literal as JSON.stringify (and RFC 8785) writes it. Strings without anything to escape, the common
 * case, are quoted by hand: setting up the native stringifier once per string value was ~15% of a key's cost.
 * Throws a Fault with `loneSurrogate` as its reason for a string that UTF-8 cannot encode.
 */
export function quote(text: string, loneSurrogate: string): string {
  return quotePlain(text) ?? quoteEscaped(text, loneSurrogate);
}

/** `"text"` when nothing in `text` needs an escape and it has no surrogate; otherwise `undefined`. */
export function quotePlain(text: string): string | undefined {
  const length = text.length;
  if (length > HAND_QUOTED_LIMIT) return undefined;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    // Control characters, '"' and '\' need escapes; any surrogate needs the well-formedness check.
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return undefined;
  }
  return '"' + text + '"';
}

function quoteEscaped(text: string, loneSurrogate: string): string {
  if (!text.isWellFormed()) throw new Fault(loneSurrogate);
  return JSON.stringify(text);
}
