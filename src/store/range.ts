import { compareUtf8 } from "../key/bytes.js";

/**
 * The key range one `list()` page covers, as bounds an ordered index can seek on: SQLite (BINARY), PostgreSQL
 * (`COLLATE "C"`) and Redis (ZRANGEBYLEX) all order keys by their UTF-8 bytes, which is code point order. A filter
 * such as `(@after IS NULL OR key > @after)` cannot be used for a seek, so a page at the end of a large table cost
 * a scan of everything before it; each store builds one statement per combination of bounds instead.
 */
export interface KeyRange {
  /** The lower bound and whether it is included (`>=`, a prefix) or not (`>`, the last key of the previous page). */
  lower?: { key: string; inclusive: boolean };
  /** Keys are strictly less than this (the first string after every string that starts with the prefix). */
  upper?: string;
}

export function keyRange(prefix: string | undefined, after: string | undefined): KeyRange {
  const range: KeyRange = {};
  if (after !== undefined && (prefix === undefined || compareBytes(after, prefix) >= 0)) {
    range.lower = { key: after, inclusive: false };
  } else if (prefix !== undefined && prefix !== "") {
    range.lower = { key: prefix, inclusive: true };
  }
  if (prefix !== undefined && prefix !== "") {
    const upper = prefixEnd(prefix);
    if (upper !== undefined) range.upper = upper;
  }
  return range;
}

/** Orders as the stores do: by UTF-8 bytes, not by UTF-16 code units as JavaScript's `<` does. */
export function compareBytes(a: string, b: string): number {
  return compareUtf8(a, b);
}

/**
 * The least string greater than every string starting with `prefix`: its last code point plus one (skipping the
 * surrogate range, which UTF-8 cannot hold), dropping trailing U+10FFFF. `undefined` when there is none, or for a
 * prefix with a lone surrogate.
 */
export function prefixEnd(prefix: string): string | undefined {
  // A lone surrogate reaches the store as U+FFFD: no bound is safe to derive, the exact prefix filter still applies.
  if (!prefix.isWellFormed()) return undefined;
  const points = [...prefix].map((c) => c.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last < 0x10ffff) {
      const next = last === 0xd7ff ? 0xe000 : last >= 0xd800 && last <= 0xdfff ? 0xe000 : last + 1;
      return String.fromCodePoint(...points, next);
    }
  }
  return undefined;
}

/**
 * Orders keys as the stores do, by code point (which is UTF-8 byte order), without encoding them: JavaScript's `<`
 * compares UTF-16 code units, which puts a character beyond U+FFFF (a surrogate pair, 0xD800-0xDFFF) before
 * U+E000-U+FFFF. At the first unit that differs, surrogates are moved above that range. The same order as
 * `compareBytes` for well-formed strings, without encoding either; `compareBytes` stays for bounds sent to a server,
 * which sees a lone surrogate as U+FFFD.
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return inPointOrder(x) - inPointOrder(y);
  }
  return a.length - b.length;
}

function inPointOrder(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/** The index of the first key of the sorted `keys` (in `compareKeys` order) that is not less than `bound`. */
export function firstAtOrAfter(keys: readonly string[], bound: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareKeys(keys[middle]!, bound) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}
