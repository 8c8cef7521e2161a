import { utf8Length } from "./bytes.js";
import { quotePlain } from "./quote.js";

/**
 * What sorting and quoting one object's member names produced, kept per insertion-order sequence of names: tool
 * arguments repeat their shapes (every item of an order list, every call of one tool), so the sort and the quoting
 * are done once per shape instead of once per object.
 */
export interface Shape {
  /** The names in insertion order (`Object.keys`), as looked up. */
  readonly names: readonly string[];
  /** The same names in RFC 8785 order. */
  readonly sorted: readonly string[];
  /**
   * `,"name":` for each sorted name in turn, in UTF-8: head i is `heads[headEnds[i - 1]]` (0 for the first) up to
   * `heads[headEnds[i]]`; the first member written skips the comma and opens the object with `{` instead. Bytes,
   * not strings: a head of 13 characters or more was a rope that every copy had to walk.
   */
  readonly heads: Uint8Array;
  readonly headEnds: readonly number[];
  /** Every name is ASCII (the writer decodes its output as Latin-1 while it is). */
  readonly ascii: boolean;
  /** One of the names is `toJSON`, which JSON.stringify calls when it is a function. */
  readonly hasToJSON: boolean;
}

/**
 * A fixed table, so memory is bounded (2 x SLOTS shapes of at most MAX_NAMES names) and a lookup allocates nothing.
 * Two ways per slot: with one, two shapes of one call that shared a slot (the 1 KB fixture's outer object and its
 * address did) pushed each other out on every call, and missed forever.
 *
 * Admission: a shape is cached on its second sighting among the last two misses at its slot. Objects whose names
 * are new every call (maps keyed by ids) then never evict a useful shape and cost a few probes and two reference
 * stores, where caching them made such input 1.3-2x slower than not caching at all.
 */
const SLOTS = 512;
const MAX_NAMES = 256;
/** The shape admitted last at each slot, and the one before it. */
const newer: (Shape | undefined)[] = new Array(SLOTS).fill(undefined);
const older: (Shape | undefined)[] = new Array(SLOTS).fill(undefined);
/** The names of the last two misses at each slot, newest first. */
const missed: (readonly string[] | undefined)[] = new Array(SLOTS).fill(undefined);
const missedBefore: (readonly string[] | undefined)[] = new Array(SLOTS).fill(undefined);

/**
 * The cached shape of an object with these names (`Object.keys`, at least one), or `undefined` on a miss. The array
 * may be kept: the caller must not change it afterwards.
 */
export function shapeOf(names: readonly string[]): Shape | undefined {
  const count = names.length;
  if (count > MAX_NAMES) return undefined;
  const slot = slotOf(names, count);
  let shape = newer[slot];
  if (shape !== undefined && sameNames(shape.names, names, count)) return shape;
  shape = older[slot];
  if (shape !== undefined && sameNames(shape.names, names, count)) return shape;
  const last = missed[slot];
  if (last !== undefined && sameNames(last, names, count)) {
    missed[slot] = undefined;
    return admit(slot, names);
  }
  const before = missedBefore[slot];
  if (before !== undefined && sameNames(before, names, count)) {
    missedBefore[slot] = undefined;
    return admit(slot, names);
  }
  missedBefore[slot] = last;
  missed[slot] = names;
  return undefined;
}

function admit(slot: number, names: readonly string[]): Shape | undefined {
  const shape = buildShape(names);
  if (shape !== undefined) {
    older[slot] = newer[slot];
    newer[slot] = shape;
  }
  return shape;
}

/** Mixes the count with the length and edge characters of the first, middle and last names (exported for tests). */
export function slotOf(names: readonly string[], count: number): number {
  const first = names[0]!;
  const middle = names[count >> 1]!;
  const last = names[count - 1]!;
  // charCodeAt past the end is NaN, which the bit operations read as 0: an empty name is fine.
  let h = Math.imul(count, 0x9e3779b1) ^ first.length;
  h = Math.imul(h ^ first.charCodeAt(0), 0x85ebca6b) ^ middle.length;
  h = Math.imul(h ^ middle.charCodeAt(middle.length - 1), 0xc2b2ae35) ^ last.length;
  h = Math.imul(h ^ last.charCodeAt(last.length - 1), 0x27d4eb2f);
  return (h ^ (h >>> 15)) & (SLOTS - 1);
}

function sameNames(a: readonly string[], b: readonly string[], count: number): boolean {
  if (a.length !== count) return false;
  for (let i = 0; i < count; i++) if (a[i] !== b[i]) return false;
  return true;
}

const encoder = new TextEncoder();

/**
 * `undefined` when a name needs an escape or a check: such shapes stay on the uncached path, which writes them (and
 * reports a lone surrogate at the right member) exactly as before.
 */
function buildShape(names: readonly string[]): Shape | undefined {
  const sorted = names.slice();
  sortNames(sorted);
  let text = "";
  let end = 0;
  const headEnds: number[] = [];
  let hasToJSON = false;
  for (const name of sorted) {
    const quoted = quotePlain(name);
    if (quoted === undefined) return undefined;
    const head = "," + quoted + ":";
    text += head;
    end += utf8Length(head);
    headEnds.push(end);
    if (name === "toJSON") hasToJSON = true;
  }
  const heads = encoder.encode(text);
  return { names, sorted, heads, headEnds, ascii: heads.length === text.length, hasToJSON };
}

/**
 * Orders member names by UTF-16 code units (RFC 8785 section 3.2.3): JavaScript's `<` on strings compares code
 * units. Insertion sort, because tool arguments have few members and often arrive already in order; it writes
 * nothing when they do.
 */
export function sortNames(names: string[]): void {
  for (let i = 1; i < names.length; i++) {
    const name = names[i]!;
    let j = i - 1;
    if (names[j]! < name) continue;
    while (j >= 0 && names[j]! > name) {
      names[j + 1] = names[j]!;
      j--;
    }
    names[j + 1] = name;
  }
}

/** Whether `names` is already in RFC 8785 order (no two names are equal: they are one object's). */
export function inOrder(names: readonly string[]): boolean {
  for (let i = 1; i < names.length; i++) if (!(names[i - 1]! < names[i]!)) return false;
  return true;
}
