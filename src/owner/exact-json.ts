/**
 * The form a JSON request body is fingerprinted in: one text per JSON value, so that two bodies share it exactly
 * when they are the same value. Member order and whitespace do not count; everything else does, which is where
 * this differs from RFC 8785 (the key formula's form, which goes through IEEE doubles):
 *
 * - a number is its exact decimal value, `<sign><digits>e<exponent>` with no leading or trailing zero digits
 *   (`1`, `1.0` and `10e-1` are `1e0`; `9007199254740993` stays apart from `9007199254740992`); zero is `0`;
 * - members are sorted by their names' UTF-16 code units, strings are written as `JSON.stringify` writes them;
 * - what has no one value is refused: duplicate member names (parsers keep the first, the last, or both), lone
 *   surrogates (not Unicode text), and nesting deeper than `MAX_DEPTH` (which parsers refuse or overflow on).
 */
export const MAX_DEPTH = 1000;

/** Why a JSON body was refused; `path` is a JSON Pointer to where (`""` for the body itself). */
export interface JsonRefusal {
  readonly refused: string;
  readonly path: string;
}

/** Not JSON at all (a syntax error): hashed as raw bytes by the caller. */
export const NOT_JSON = Symbol("not json");

const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
const PLAIN_INTEGER = /^-?(?:0|[1-9]\d*)$/;
const NUMBER = /^(-?)(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** The exact form of JSON text, `NOT_JSON` for a syntax error, or why it has no one value. */
export function exactJsonText(text: string): string | JsonRefusal | typeof NOT_JSON {
  try {
    const parser = new Parser(text);
    const out = parser.value(0);
    parser.space();
    if (parser.at !== text.length) return NOT_JSON;
    return out;
  } catch (error) {
    if (error === SYNTAX) return NOT_JSON;
    if (error instanceof Refused) return { refused: error.message, path: error.path };
    throw error;
  }
}

/**
 * The exact form of a value a body parser made (Express after `express.json()`): numbers are what the parser's
 * doubles hold, since the text is gone. `undefined` for something that is not JSON (a class instance).
 */
export function exactJsonValue(value: unknown): string | JsonRefusal | undefined {
  try {
    return fromValue(value, [], 0);
  } catch (error) {
    if (error === NOT_A_VALUE) return undefined;
    if (error instanceof Refused) return { refused: error.message, path: error.path };
    throw error;
  }
}

const SYNTAX = Symbol("syntax");
const NOT_A_VALUE = Symbol("not a value");

class Refused extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
  }
}

const pointer = (path: string, name: string | number) =>
  `${path}/${String(name).replace(/~/g, "~0").replace(/\//g, "~1")}`;

function tooDeep(path: string): Refused {
  return new Refused(`it nests deeper than ${MAX_DEPTH} levels`, path);
}

function checkString(value: string, path: string): string {
  if (LONE_SURROGATE.test(value))
    return fail(new Refused("a string has a lone surrogate (\\ud800-\\udfff)", path));
  return JSON.stringify(value);
}

/**
 * Whether a string token is already as `JSON.stringify` writes it: no escapes, and none of what it would escape or
 * refuse (control characters, a syntax error unescaped; surrogates, which may be lone).
 */
function asWritten(token: string): boolean {
  for (let i = 1; i < token.length - 1; i++) {
    const c = token.charCodeAt(i);
    if (c < 0x20 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return false;
  }
  return true;
}

function fail(error: unknown): never {
  throw error;
}

function members(entries: [string, string][], path: () => string): string {
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (let i = 1; i < entries.length; i++) {
    if (entries[i]![0] === entries[i - 1]![0]) {
      throw new Refused(`member ${JSON.stringify(entries[i]![0])} appears twice`, path());
    }
  }
  return `{${entries.map(([name, value]) => `${JSON.stringify(name)}:${value}`).join(",")}}`;
}

/** A JSON number's text in exact form; `exponent` is kept as text beyond what a double counts exactly. */
export function exactNumber(text: string): string | undefined {
  if (PLAIN_INTEGER.test(text)) {
    if (text === "0" || text === "-0") return "0";
    const trimmed = text.replace(/0+$/, "");
    return `${trimmed}e${text.length - trimmed.length}`;
  }
  const match = NUMBER.exec(text);
  if (!match) return undefined;
  const [, sign, whole, fraction = "", exponent = "0"] = match;
  let digits = `${whole}${fraction}`.replace(/^0+/, "");
  if (digits === "") return "0";
  const trimmed = digits.replace(/0+$/, "");
  const shift = digits.length - trimmed.length - fraction.length;
  digits = trimmed;
  // Within 15 digits the sum is exact in a double; beyond, BigInt keeps an absurd exponent exact too.
  const e =
    exponent.replace(/^[+-]?0*/, "").length <= 15
      ? String(Number(exponent) + shift)
      : String(BigInt(exponent) + BigInt(shift));
  return `${sign}${digits}e${e}`;
}

/** `trail` is where `value` sits (names and indexes), turned into a JSON Pointer only for a refusal. */
function fromValue(value: unknown, trail: (string | number)[], depth: number): string {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw NOT_A_VALUE;
    return exactNumber(String(Object.is(value, -0) ? 0 : value)) ?? fail(NOT_A_VALUE);
  }
  const at = () => trail.reduce<string>((path, name) => pointer(path, name), "");
  if (typeof value === "string")
    return LONE_SURROGATE.test(value) ? checkString(value, at()) : JSON.stringify(value);
  if (typeof value !== "object") throw NOT_A_VALUE;
  if (depth >= MAX_DEPTH) throw tooDeep(at());
  if (Array.isArray(value)) {
    const items: string[] = [];
    for (let i = 0; i < value.length; i++) {
      trail.push(i);
      items.push(fromValue(value[i], trail, depth + 1));
      trail.pop();
    }
    return `[${items.join(",")}]`;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw NOT_A_VALUE;
  const entries: [string, string][] = [];
  for (const [name, member] of Object.entries(value)) {
    if (member === undefined) continue;
    if (LONE_SURROGATE.test(name)) checkString(name, at());
    trail.push(name);
    entries.push([name, fromValue(member, trail, depth + 1)]);
    trail.pop();
  }
  return members(entries, at);
}

/**
 * A recursive-descent parser of RFC 8259 JSON text that writes the exact form as it goes. Where it is in the
 * document is kept as a stack of names and indexes, turned into a JSON Pointer only for a refusal.
 */
class Parser {
  at = 0;
  private readonly trail: (string | number)[] = [];
  constructor(private readonly text: string) {}

  private path(): string {
    return this.trail.reduce<string>((path, name) => pointer(path, name), "");
  }

  private refuse(message: string): never {
    throw new Refused(message, this.path());
  }

  space(): void {
    const { text } = this;
    while (this.at < text.length) {
      const c = text.charCodeAt(this.at);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.at++;
    }
  }

  value(depth: number): string {
    this.space();
    const { text } = this;
    const c = text.charCodeAt(this.at);
    if (c === 0x7b) return this.object(depth);
    if (c === 0x5b) return this.array(depth);
    if (c === 0x22) return this.string();
    if (c === 0x74 && text.startsWith("true", this.at)) return this.word("true");
    if (c === 0x66 && text.startsWith("false", this.at)) return this.word("false");
    if (c === 0x6e && text.startsWith("null", this.at)) return this.word("null");
    return this.number();
  }

  private word(word: string): string {
    this.at += word.length;
    return word;
  }

  object(depth: number): string {
    if (depth >= MAX_DEPTH) this.refuse(`it nests deeper than ${MAX_DEPTH} levels`);
    this.at++;
    const entries: [string, string][] = [];
    this.space();
    if (this.text.charCodeAt(this.at) === 0x7d) {
      this.at++;
      return "{}";
    }
    for (;;) {
      this.space();
      if (this.text.charCodeAt(this.at) !== 0x22) throw SYNTAX;
      const name = JSON.parse(this.string()) as string;
      this.space();
      if (this.text.charCodeAt(this.at++) !== 0x3a) throw SYNTAX;
      this.trail.push(name);
      entries.push([name, this.value(depth + 1)]);
      this.trail.pop();
      this.space();
      const next = this.text.charCodeAt(this.at++);
      if (next === 0x7d) {
        try {
          return members(entries, () => "");
        } catch (error) {
          if (error instanceof Refused) this.refuse(error.message);
          throw error;
        }
      }
      if (next !== 0x2c) throw SYNTAX;
    }
  }

  array(depth: number): string {
    if (depth >= MAX_DEPTH) this.refuse(`it nests deeper than ${MAX_DEPTH} levels`);
    this.at++;
    const items: string[] = [];
    this.space();
    if (this.text.charCodeAt(this.at) === 0x5d) {
      this.at++;
      return "[]";
    }
    for (;;) {
      this.trail.push(items.length);
      items.push(this.value(depth + 1));
      this.trail.pop();
      this.space();
      const next = this.text.charCodeAt(this.at++);
      if (next === 0x5d) return `[${items.join(",")}]`;
      if (next !== 0x2c) throw SYNTAX;
    }
  }

  /**
   * A string token in the form `JSON.stringify` writes it. One without escapes is that form already (it cannot
   * hold `"`, `\` or control characters); one with escapes is decoded by `JSON.parse` and written again.
   */
  string(): string {
    const { text } = this;
    const start = this.at;
    let i = start + 1;
    for (;;) {
      const q = text.indexOf('"', i);
      if (q === -1) throw SYNTAX;
      let backslashes = 0;
      while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
      i = q + 1;
      if (backslashes % 2 === 0) break;
    }
    this.at = i;
    const token = text.slice(start, i);
    if (asWritten(token)) return token;
    let value: string;
    try {
      value = JSON.parse(token) as string;
    } catch {
      throw SYNTAX;
    }
    if (LONE_SURROGATE.test(value)) this.refuse("a string has a lone surrogate (\\ud800-\\udfff)");
    return JSON.stringify(value);
  }

  number(): string {
    const { text } = this;
    const start = this.at;
    for (;;) {
      const c = text.charCodeAt(this.at);
      // 0-9 + - . e E
      if ((c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e || c === 0x65 || c === 0x45)
        this.at++;
      else break;
    }
    return exactNumber(text.slice(start, this.at)) ?? fail(SYNTAX);
  }
}
