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
 * The inspector's one redaction: every string it shows (in its JSON API, its live stream, `idemkey inspect --list`)
 * passes through one of these three, all made by `redactor` from one list of fields.
 */
export interface Redactor {
  /** Masks a JSON value the user's code wrote (arguments, results, a recorded answer): member names and strings. */
  (value: unknown): unknown;
  /** Masks what follows a masked name and `=` or `:` in free text: `password=hunter2`, `Authorization: Bearer x`. */
  text(text: string): string;
  /**
   * Masks every string at any depth of a value the inspector built itself (a row, an answer), with `text`; member
   * names and everything else are kept, since they are the inspector's own (`tokenHeader` is no token).
   */
  strings<T>(value: T): T;
}

/** Where a value sits beside its name: `[name, value]` pairs and `{ name, value }` objects (header lists). */
const PAIR_NAMES = ["name", "key", "header", "field"];
const PAIR_VALUES = ["value", "values"];

/**
 * A function that copies a JSON value with every value named by one of `fields` replaced with `"[redacted]"`, at
 * any depth: an object member whose name contains a field (case-insensitively, ignoring `_` and `-`), the second
 * item of a `[name, value]` pair, the `value` beside such a `name` (`{ "name": "Authorization", "value": ... }`),
 * and, in every string, what follows such a name and `=` or `:`. Containing, not equal: `token` also masks
 * `accessToken` and `githubToken`, since masking too much is the safe mistake here.
 */
export function redactor(fields: readonly string[]): Redactor {
  const names = fields.map(normalize).filter((n) => n !== "");
  if (names.length === 0) {
    return Object.assign((value: unknown) => value, {
      text: (text: string) => text,
      strings: <T>(value: T) => value,
    });
  }
  const masked = (name: string) => {
    const n = normalize(name);
    return names.some((field) => n.includes(field));
  };
  // A name in text: the field's letters with `_` or `-` allowed between them, inside a word of such characters.
  const spelled = names.map((n) => [...n].map((c) => c.replace(/[^a-z0-9]/g, "")).join("[-_]?"));
  const inText = new RegExp(
    `([\\w-]*(?:${spelled.join("|")})[\\w-]*["']?\\s*[:=]\\s*["']?(?:(?:bearer|basic|token)\\s+)?)[^\\s"'&,;]+`,
    "gi",
  );
  // Task ids, tool names and targets repeat on every row of every answer: short ones are masked once.
  const seen = new Map<string, string>();
  const text = (value: string) => {
    if (value.length > 200) return value.replace(inText, `$1${REDACTED}`);
    let shown = seen.get(value);
    if (shown === undefined) {
      if (seen.size >= 10_000) seen.clear();
      shown = value.replace(inText, `$1${REDACTED}`);
      seen.set(value, shown);
    }
    return shown;
  };

  const walk = (value: unknown): unknown => {
    if (typeof value === "string") return text(value);
    if (Array.isArray(value)) {
      if (value.length === 2 && typeof value[0] === "string" && masked(value[0])) return [value[0], REDACTED];
      return value.map(walk);
    }
    if (typeof value !== "object" || value === null) return value;
    const record = value as Record<string, unknown>;
    const named = PAIR_NAMES.some((n) => typeof record[n] === "string" && masked(record[n] as string));
    const out: Record<string, unknown> = {};
    for (const [name, member] of Object.entries(value)) {
      const hide = masked(name) || (named && PAIR_VALUES.includes(name));
      // defineProperty, so that a member named "__proto__" stays a member.
      Object.defineProperty(out, name, {
        value: hide ? REDACTED : walk(member),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };
  const strings = (value: unknown): unknown => {
    if (typeof value === "string") return text(value);
    if (Array.isArray(value)) return value.map(strings);
    if (typeof value !== "object" || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [name, member] of Object.entries(value)) {
      Object.defineProperty(out, name, {
        value: strings(member),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };
  return Object.assign(walk, { text, strings: strings as <T>(value: T) => T });
}
