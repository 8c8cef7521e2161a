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
    return fromValue(value, [], 0, []);
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

/** Where a value sits (names and indexes) as a JSON Pointer: built only for a refusal. */
function pointer(trail: readonly (string | number)[]): string {
  let path = "";
  for (const name of trail) path += `/${String(name).replace(/~/g, "~0").replace(/\//g, "~1")}`;
  return path;
}

function tooDeep(trail: readonly (string | number)[]): Refused {
  return new Refused(`it nests deeper than ${MAX_DEPTH} levels`, pointer(trail));
}

function loneSurrogate(trail: readonly (string | number)[]): Refused {
  return new Refused("a string has a lone surrogate (\\ud800-\\udfff)", pointer(trail));
}

/**
 * An object's members in exact form, from `stack` at `base` on: three entries per member (its name, the name as
 * `JSON.stringify` writes it, its value's form) in the order they came; they are taken off the stack. One stack
 * serves every object of a document (nested ones take their members off before their parent goes on), so that
 * no array is made per object nor a pair per member; a sort goes through offsets, with one comparator for all.
 */
function writeMembers(stack: string[], base: number, trail: readonly (string | number)[]): string {
  const end = stack.length;
  const count = (end - base) / 3;
  if (count === 1) {
    const one = `{${stack[base + 1]}:${stack[base + 2]}}`;
    stack.length = base;
    return one;
  }
  // Most objects come in some order already (a serializer's, a canonical one): a pass that finds it in order
  // spares the sort.
  let inOrder = true;
  for (let at = base + 3; at < end; at += 3) {
    if (stack[at - 3]! > stack[at]!) {
      inOrder = false;
      break;
    }
  }
  let order: number[] | undefined;
  if (!inOrder) {
    order = new Array<number>(count);
    for (let i = 0; i < count; i++) order[i] = base + i * 3;
    sorting = stack;
    order.sort(byName);
    sorting = NONE;
  }
  let out = "{";
  let previous: string | undefined;
  for (let i = 0; i < count; i++) {
    const at = order === undefined ? base + i * 3 : order[i]!;
    const name = stack[at]!;
    if (name === previous) throw new Refused(`member ${JSON.stringify(name)} appears twice`, pointer(trail));
    previous = name;
    out += i === 0 ? `${stack[at + 1]}:${stack[at + 2]}` : `,${stack[at + 1]}:${stack[at + 2]}`;
  }
  stack.length = base;
  return `${out}}`;
}

const NONE: readonly string[] = [];
/** The members `byName` compares, set around one `sort` (which calls nothing that sorts again). */
let sorting: readonly string[] = NONE;
function byName(a: number, b: number): number {
  const x = sorting[a]!;
  const y = sorting[b]!;
  return x < y ? -1 : x > y ? 1 : 0;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/**
 * A JSON number's text (`text` from `start` to `end`) in exact form, or `undefined` when it is not one. Read in
 * one pass over the text: the significant digits run from the first non-zero digit to the last (across the
 * point), and the zeros after them and the digits after the point move into the exponent; `exponent` is kept as
 * text beyond what a double counts exactly.
 */
export function exactNumber(text: string, start = 0, end = text.length): string | undefined {
  let i = text.charCodeAt(start) === 0x2d ? start + 1 : start;
  const negative = i !== start;
  const wholeStart = i;
  const lead = text.charCodeAt(i);
  if (lead === 0x30) i++;
  else if (lead >= 0x31 && lead <= 0x39) while (isDigit(text.charCodeAt(++i)));
  else return undefined;
  const wholeEnd = i;
  let fractionStart = i;
  if (text.charCodeAt(i) === 0x2e) {
    fractionStart = ++i;
    while (isDigit(text.charCodeAt(i))) i++;
    if (i === fractionStart) return undefined;
  }
  const fractionEnd = i;
  const fraction = fractionEnd - fractionStart;
  let exponentStart = i;
  if (i < end) {
    const e = text.charCodeAt(i);
    if (e !== 0x65 && e !== 0x45) return undefined;
    exponentStart = ++i;
    const sign = text.charCodeAt(i);
    if (sign === 0x2b || sign === 0x2d) i++;
    const digits = i;
    while (isDigit(text.charCodeAt(i))) i++;
    if (i === digits || i !== end) return undefined;
  }
  // The first and last non-zero digits, stepping over the point (between the whole part and the fraction).
  const point = fraction > 0 ? wholeEnd : -1;
  let first = wholeStart;
  while (first < fractionEnd && (first === point || text.charCodeAt(first) === 0x30)) first++;
  if (first >= fractionEnd) return "0";
  let last = fractionEnd - 1;
  while (last === point || text.charCodeAt(last) === 0x30) last--;
  const trailingZeros = last < wholeEnd ? wholeEnd - 1 - last + fraction : fractionEnd - 1 - last;
  const shift = trailingZeros - fraction;
  // The sign is taken with the digits when they start right after it, as they do unless there are leading zeros.
  const from = negative && first === wholeStart ? start : first;
  const digits =
    first >= fractionStart || last < wholeEnd
      ? text.slice(from, last + 1)
      : text.slice(from, wholeEnd) + text.slice(fractionStart, last + 1);
  let suffix: string;
  if (exponentStart !== end) {
    const exponent = text.slice(exponentStart, end);
    // Within 15 digits the sum is exact in a double; beyond, BigInt keeps an absurd exponent exact too.
    suffix =
      exponent.replace(/^[+-]?0*/, "").length <= 15
        ? `e${Number(exponent) + shift}`
        : `e${BigInt(exponent) + BigInt(shift)}`;
  } else
    suffix =
      shift >= -SUFFIXES_FROM && shift < SUFFIXES_FROM ? SUFFIXES[shift + SUFFIXES_FROM]! : `e${shift}`;
  return negative && from !== start ? `-${digits}${suffix}` : digits + suffix;
}

/** `e-32` to `e31`, made once: most numbers' exponents, which a number would otherwise make a string of. */
const SUFFIXES_FROM = 32;
const SUFFIXES = Array.from({ length: 2 * SUFFIXES_FROM }, (_, i) => `e${i - SUFFIXES_FROM}`);

/**
 * `trail` is where `value` sits (names and indexes), turned into a JSON Pointer only for a refusal; `stack` holds
 * the members of the objects being written (see `writeMembers`).
 */
function fromValue(value: unknown, trail: (string | number)[], depth: number, stack: string[]): string {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw NOT_A_VALUE;
    return exactNumber(String(Object.is(value, -0) ? 0 : value)) ?? fail(NOT_A_VALUE);
  }
  if (typeof value === "string") {
    if (LONE_SURROGATE.test(value)) throw loneSurrogate(trail);
    return JSON.stringify(value);
  }
  if (typeof value !== "object") throw NOT_A_VALUE;
  if (depth >= MAX_DEPTH) throw tooDeep(trail);
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      trail.push(i);
      const item = fromValue(value[i], trail, depth + 1, stack);
      trail.pop();
      out += i === 0 ? item : `,${item}`;
    }
    return `${out}]`;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw NOT_A_VALUE;
  const object = value as Record<string, unknown>;
  const base = stack.length;
  for (const name in object) {
    if (!Object.hasOwn(object, name)) continue;
    const member = object[name];
    if (member === undefined) continue;
    if (LONE_SURROGATE.test(name)) throw loneSurrogate(trail);
    trail.push(name);
    const form = fromValue(member, trail, depth + 1, stack);
    trail.pop();
    stack.push(name, JSON.stringify(name), form);
  }
  return stack.length === base ? "{}" : writeMembers(stack, base, trail);
}

function fail(error: unknown): never {
  throw error;
}

/**
 * A recursive-descent parser of RFC 8259 JSON text that writes the exact form as it goes. Where it is in the
 * document is kept as a stack of names and indexes, turned into a JSON Pointer only for a refusal.
 */
class Parser {
  at = 0;
  private readonly trail: (string | number)[] = [];
  /** The members of the objects being read (see `writeMembers`). */
  private readonly stack: string[] = [];
  /** Whether the last string token read was written as `JSON.stringify` writes it (no escapes). */
  private plain = false;
  constructor(private readonly text: string) {}

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
    if (depth >= MAX_DEPTH) throw tooDeep(this.trail);
    this.at++;
    this.space();
    if (this.text.charCodeAt(this.at) === 0x7d) {
      this.at++;
      return "{}";
    }
    const { stack } = this;
    const base = stack.length;
    for (;;) {
      this.space();
      if (this.text.charCodeAt(this.at) !== 0x22) throw SYNTAX;
      const written = this.string();
      const name = this.plain ? written.slice(1, -1) : (JSON.parse(written) as string);
      this.space();
      if (this.text.charCodeAt(this.at++) !== 0x3a) throw SYNTAX;
      this.trail.push(name);
      const form = this.value(depth + 1);
      this.trail.pop();
      stack.push(name, written, form);
      this.space();
      const next = this.text.charCodeAt(this.at++);
      if (next === 0x7d) return writeMembers(stack, base, this.trail);
      if (next !== 0x2c) throw SYNTAX;
    }
  }

  array(depth: number): string {
    if (depth >= MAX_DEPTH) throw tooDeep(this.trail);
    this.at++;
    this.space();
    if (this.text.charCodeAt(this.at) === 0x5d) {
      this.at++;
      return "[]";
    }
    let out = "[";
    for (let index = 0; ; index++) {
      this.trail.push(index);
      const item = this.value(depth + 1);
      this.trail.pop();
      out += index === 0 ? item : `,${item}`;
      this.space();
      const next = this.text.charCodeAt(this.at++);
      if (next === 0x5d) return `${out}]`;
      if (next !== 0x2c) throw SYNTAX;
    }
  }

  /**
   * A string token in the form `JSON.stringify` writes it. One without escapes, control characters or surrogates
   * is that form already (it cannot hold `"` or `\`); any other is decoded by `JSON.parse` and written again.
   */
  string(): string {
    const { text } = this;
    const start = this.at;
    let plain = true;
    let i = start + 1;
    for (;;) {
      if (i >= text.length) throw SYNTAX;
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c === 0x5c) {
        plain = false;
        i += 2;
        continue;
      }
      if (c < 0x20 || (c >= 0xd800 && c <= 0xdfff)) plain = false;
      i++;
    }
    this.at = i + 1;
    const token = text.slice(start, i + 1);
    this.plain = plain;
    if (plain) return token;
    let value: string;
    try {
      value = JSON.parse(token) as string;
    } catch {
      throw SYNTAX;
    }
    if (LONE_SURROGATE.test(value)) throw loneSurrogate(this.trail);
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
    return exactNumber(text, start, this.at) ?? fail(SYNTAX);
  }
}
