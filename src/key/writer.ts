import { allocBytes, decodeBytes, encodeInto } from "./bytes.js";
import { Fault } from "./fault.js";

/**
 * The canonical form is written as UTF-8 bytes into one reused buffer, which is hashed as it is or decoded once
 * into a flat string. Building it with `+=` left a rope of thousands of pieces that the hash had to flatten first:
 * 1.2 µs of a 1 KB key (a quarter of it) and 33 µs of a 64 KB one (`npm run bench -- key`, BENCHMARKS.md).
 *
 * One buffer per thread, used as a stack: a write started while another is under way (a `toJSON` or a getter that
 * derives a key of its own) appends after it and gives the space back when it closes, so it never touches the
 * outer write's bytes. Code that calls out to user code must therefore not keep `buf` or `pos` in a local across
 * the call; only the leaf writes below, which call nothing, do.
 */
const INITIAL_BYTES = 16 * 1024;
/** A buffer grown past this by one large value is dropped when the outermost write closes, not kept forever. */
const KEPT_BYTES = 1024 * 1024;

let buf = allocBytes(INITIAL_BYTES);
let pos = 0;
/** Whether a byte above 0x7f may have been written since the outermost write opened (then decoding is UTF-8). */
let wide = false;

/** Starts a write at the end of the buffer; pass what it returns to `text` or `bytes`, then always to `close`. */
export function open(): number {
  if (pos === 0) wide = false;
  return pos;
}

/** Gives back the space of the write opened at `start`, whether it finished or threw. */
export function close(start: number): void {
  pos = start;
  if (start === 0 && buf.length > KEPT_BYTES) buf = allocBytes(INITIAL_BYTES);
}

/** Where the next byte goes: a mark to pass to `text` or `bytes` as the end of a part of the write. */
export function at(): number {
  return pos;
}

/** What was written from `start` (up to `end`, or to now), as a flat string. */
export function text(start: number, end = pos): string {
  // Latin-1 decoding is a plain copy, and exact while every byte is ASCII.
  return decodeBytes(buf, !wide, start, end);
}

/** What was written from `start` (up to `end`, or to now), as a view valid until the next write or `close`. */
export function bytes(start: number, end = pos): Uint8Array {
  return buf.subarray(start, end);
}

function reserve(count: number): void {
  let size = buf.length * 2;
  while (size < pos + count) size *= 2;
  const next = allocBytes(size);
  next.set(buf.subarray(0, pos));
  buf = next;
}

export function writeByte(code: number): void {
  if (pos === buf.length) reserve(1);
  buf[pos++] = code;
}

/** `text` must be ASCII: numbers as ECMAScript prints them, and the literals. */
export function writeAscii(text: string): void {
  const length = text.length;
  if (pos + length > buf.length) reserve(length);
  const b = buf;
  let p = pos;
  for (let i = 0; i < length; i++) b[p++] = text.charCodeAt(i);
  pos = p;
}

/** Bytes `from` up to `to` of `source`, UTF-8 already; `ascii` when none is above 0x7f. */
export function writeEncoded(source: Uint8Array, from: number, to: number, ascii: boolean): void {
  const count = to - from;
  if (pos + count > buf.length) reserve(count);
  const b = buf;
  let p = pos;
  for (let i = from; i < to; i++) b[p++] = source[i]!;
  pos = p;
  if (!ascii) wide = true;
}

/** Any well-formed string, encoded natively: for long strings and the rare ones that need an escape. */
export function writeUtf8(text: string): void {
  // A UTF-16 unit takes at most 3 bytes in UTF-8 (a surrogate pair, two units, takes 4).
  if (pos + 3 * text.length > buf.length) reserve(3 * text.length);
  const written = encodeInto(text, buf, pos);
  if (written !== text.length) wide = true;
  pos += written;
}

/**
 * Strings up to this length are scanned and copied here; longer ones are checked by a regular expression and
 * encoded natively, which wins once the cost of calling into it is spread over enough characters.
 */
const LOOPED_LIMIT = 256;
/** What a long string must not contain to be copied between quotes as it is: escapes, and surrogates to check. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for.
const NEEDS_CARE = /[\u0000-\u001f"\\\ud800-\udfff]/;

/**
 * A JSON string literal as JSON.stringify (and RFC 8785) writes it, in UTF-8. Throws a Fault with `loneSurrogate`
 * as its reason for a string that UTF-8 cannot encode.
 */
export function writeQuoted(text: string, loneSurrogate: string): void {
  const length = text.length;
  if (length > LOOPED_LIMIT) {
    if (NEEDS_CARE.test(text)) {
      writeEscaped(text, loneSurrogate);
      return;
    }
    writeByte(0x22);
    writeUtf8(text);
    writeByte(0x22);
    return;
  }
  if (pos + 3 * length + 2 > buf.length) reserve(3 * length + 2);
  const b = buf;
  // pos moves only at the end: on a bail-out below, the slow path writes from the opening quote again.
  let p = pos;
  b[p++] = 0x22;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      // Control characters, '"' and '\' need escapes.
      if (c < 0x20 || c === 0x22 || c === 0x5c) {
        writeEscaped(text, loneSurrogate);
        return;
      }
      b[p++] = c;
    } else if (c < 0x800) {
      b[p++] = 0xc0 | (c >> 6);
      b[p++] = 0x80 | (c & 0x3f);
      wide = true;
    } else if (c < 0xd800 || c > 0xdfff) {
      b[p++] = 0xe0 | (c >> 12);
      b[p++] = 0x80 | ((c >> 6) & 0x3f);
      b[p++] = 0x80 | (c & 0x3f);
      wide = true;
    } else {
      const low = c < 0xdc00 ? text.charCodeAt(i + 1) : Number.NaN;
      // A lone surrogate (NaN past the end compares false): the slow path throws.
      if (!(low >= 0xdc00 && low <= 0xdfff)) {
        writeEscaped(text, loneSurrogate);
        return;
      }
      const point = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
      b[p++] = 0xf0 | (point >> 18);
      b[p++] = 0x80 | ((point >> 12) & 0x3f);
      b[p++] = 0x80 | ((point >> 6) & 0x3f);
      b[p++] = 0x80 | (point & 0x3f);
      wide = true;
      i++;
    }
  }
  b[p++] = 0x22;
  pos = p;
}

/** Leaves the escapes to JSON.stringify, whose output is exactly RFC 8785's once lone surrogates are refused. */
function writeEscaped(text: string, loneSurrogate: string): void {
  if (!text.isWellFormed()) throw new Fault(loneSurrogate);
  writeUtf8(JSON.stringify(text));
}

const INT32_LIMIT = 2 ** 31;

/**
 * A finite number as ECMAScript's Number::toString prints it, which is RFC 8785's number form. `"" + value` costs a
 * string per number and, for fractions, ~85 ns in the runtime (17% of a 64 KB key): 32-bit integers (-0 among them,
 * which prints "0") and short decimal fractions (prices, rates) are written digit by digit instead.
 */
export function writeNumber(value: number): void {
  if ((value | 0) === value) {
    writeInteger(value);
    return;
  }
  if (!writeShortFraction(value)) writeAscii("" + value);
}

function writeInteger(value: number): void {
  let n = value;
  if (n < 0) {
    // -(2 ** 31) has no positive int32: its digits are written as they print.
    if (n === -INT32_LIMIT) {
      writeAscii("-2147483648");
      return;
    }
    writeByte(0x2d);
    n = -n;
  }
  if (n < 10) {
    writeByte(0x30 + n);
    return;
  }
  writeDigits(n, 0);
}

const POWERS_OF_TEN = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/**
 * The decimal digits of `value`, an integer from 0 to 2^31 - 1, at least `width` of them (zeros first). Kept in
 * int32 arithmetic (`| 0`): fed doubles by the fraction path, it was compiled for doubles and then cost 18% of a
 * deep object's key.
 */
function writeDigits(value: number, width: number): void {
  let n = value | 0;
  let digits = 1;
  while (digits < 10 && n >= POWERS_OF_TEN[digits]!) digits++;
  if (digits < width) digits = width;
  if (pos + digits > buf.length) reserve(digits);
  const b = buf;
  const end = pos + digits;
  let p = end;
  while (p > pos) {
    const quotient = (n / 10) | 0;
    b[--p] = 0x30 + (n - quotient * 10);
    n = quotient;
  }
  pos = end;
}

const SCALES = [1, 10, 100, 1000, 10000, 100000, 1000000];
const FRACTION_DIGITS = SCALES.length - 1;

/**
 * Writes `value` when it is the double nearest to `k / 10^d` for the smallest d of 1 to 6 and |k| < 2^31; returns
 * false otherwise. Then Number::toString prints exactly that decimal: doubles below 2^31 / 10^d are spaced far
 * closer than 10^-d, so no decimal with fewer significant digits (or as few, but another) rounds to `value`; d is
 * the smallest, so k has no trailing zero; and |value| >= 10^-6 prints without an exponent.
 */
function writeShortFraction(value: number): boolean {
  for (let d = 1; d <= FRACTION_DIGITS; d++) {
    const scale = SCALES[d]!;
    const k = Math.round(value * scale);
    if (!(k < INT32_LIMIT && k > -INT32_LIMIT)) return false; // also NaN: not finite, never here
    if (k / scale !== value) continue;
    let n = k;
    if (n < 0) {
      writeByte(0x2d);
      n = -n;
    }
    const whole = Math.floor(n / scale);
    writeDigits(whole, 1);
    writeByte(0x2e);
    writeDigits(n - whole * scale, d);
    return true;
  }
  return false;
}
