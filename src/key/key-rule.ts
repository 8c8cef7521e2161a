/**
 * What an idempotency key may be, wherever it travels: 1 to 255 printable ASCII characters (U+0020 to U+007E).
 * That is the alphabet of an RFC 8941 sf-string, the form the IETF draft gives the `Idempotency-Key` header, so any
 * key can be sent quoted; the keys idemkey derives (64 lowercase hex digits) fit every form below.
 */
// 255: the draft sets no limit; this is the common one (a VARCHAR(255) column, Stripe's limit) and bounds a record.
export const MAX_KEY_LENGTH = 255;

/** The rule in words, for messages: what to send instead. */
export const KEY_RULE = `1 to ${MAX_KEY_LENGTH} printable ASCII characters`;

/**
 * What is wrong with a key, as a phrase that follows its name ("ctx.idempotencyKey is empty"), or `undefined`
 * when it keeps the rule. `index` positions are in the key, from 0.
 */
export function keyProblem(key: string): string | undefined {
  if (key.length === 0) return "is empty";
  if (key.length > MAX_KEY_LENGTH) {
    return `is ${key.length} characters long; the limit is ${MAX_KEY_LENGTH}`;
  }
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code < 0x20 || code > 0x7e) {
      return `has a character that is not printable ASCII at position ${i}`;
    }
  }
  return undefined;
}

/**
 * `keyProblem`, and also what a key sent bare (an unquoted header value, a key an MCP server forwards as one) may
 * not hold: a space (HTTP trims it at the edges), `"` (starts an sf-string), `,` (HTTP joins a repeated field with
 * it) or `\` (an sf-string escape). Every reader then sees the very key that was sent. The owner's middleware reads
 * bare values more leniently (only the comma is ambiguous there, see `parseKeyHeader`): be strict in what is sent.
 */
export function bareKeyProblem(key: string): string | undefined {
  const problem = keyProblem(key);
  if (problem !== undefined) return problem;
  const at = key.search(/[ ",\\]/);
  if (at === -1) return undefined;
  const char = key[at] === " " ? "a space" : key[at];
  return `has ${char} at position ${at}, which a key sent bare may not hold`;
}
