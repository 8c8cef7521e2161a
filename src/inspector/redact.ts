/** What a masked value is replaced with. */
export const REDACTED = "[redacted]";

/**
 * The fields masked when no list is given: credentials and payment card data that tool arguments and results
 * commonly carry.
 */
export const DEFAULT_REDACT: readonly string[] = [
  "token",
  "password",
  "secret",
  "apiKey",
  "authorization",
  "cookie",
  "cardNumber",
  "card_number",
  "cvc",
  "cvv",
];

/** `apiKey`, `api_key` and `API-KEY` are one name to the redactor. */
const normalize = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "");

/**
 * A function that copies a JSON value with the value of every object member whose name contains one of `fields`
 * (case-insensitively, ignoring `_` and `-`), at any depth, replaced with `"[redacted]"`. Containing, not equal:
 * `token` also masks `accessToken` and `githubToken`, since masking too much is the safe mistake here.
 */
export function redactor(fields: readonly string[]): (value: unknown) => unknown {
  const names = fields.map(normalize).filter((n) => n !== "");
  if (names.length === 0) return (value) => value;
  const masked = (name: string) => {
    const n = normalize(name);
    return names.some((field) => n.includes(field));
  };
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (typeof value !== "object" || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [name, member] of Object.entries(value)) {
      // defineProperty, so that a member named "__proto__" stays a member.
      Object.defineProperty(out, name, {
        value: masked(name) ? REDACTED : walk(member),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };
  return walk;
}
