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
  /** `{"name":` for each sorted name, when it is the first member written. */
  readonly firstHeads: readonly string[];
  /** `,"name":` for each sorted name, after another member. */
  readonly heads: readonly string[];
  /** One of the names is `toJSON`, which JSON.stringify calls when it is a function. */
  readonly hasToJSON: boolean;
}

/**
 * A fixed table, so memory is bounded (SLOTS shapes of at most MAX_NAMES names) and a lookup allocates nothing.
 * Admission: a shape is cached on its second sighting in a row at its slot. Objects whose names are new every call
 * (maps keyed by ids) then never evict a useful shape and cost one probe and a reference store, where caching them
 * made such input 1.3-2x slower than not caching at all.
 */
const SLOTS = 1024;
const MAX_NAMES = 256;
const shapes: (Shape | undefined)[] = new Array(SLOTS).fill(undefined);
const seen: (readonly string[] | undefined)[] = new Array(SLOTS).fill(undefined);

/**
 * The cached shape of an object with these names (`Object.keys`, at least one), or `undefined` on a miss. The array
 * may be kept: the caller must not change it afterwards.
 */
export function shapeOf(names: readonly string[]): Shape | undefined {
  const count = names.length;
  if (count > MAX_NAMES) return undefined;
  const slot = slotOf(names, count);
  const shape = shapes[slot];
  if (shape !== undefined && sameNames(shape.names, names, count)) return shape;
  const candidate = seen[slot];
  if (candidate !== undefined && sameNames(candidate, names, count)) {
    seen[slot] = undefined;
    const admitted = buildShape(names);
    if (admitted !== undefined) shapes[slot] = admitted;
    return admitted;
  }
  seen[slot] = names;
  return undefined;
}

/** Mixes the count with the length and edge characters of the first, middle and last names. */
function slotOf(names: readonly string[], count: number): number {
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

/**
 * `undefined` when a name needs an escape or a check: such shapes stay on the uncached path, which writes them (and
 * reports a lone surrogate at the right member) exactly as before.
 */
function buildShape(names: readonly string[]): Shape | undefined {
  const sorted = names.slice();
  sortNames(sorted);
  const firstHeads: string[] = [];
  const heads: string[] = [];
  let hasToJSON = false;
  for (const name of sorted) {
    const quoted = quotePlain(name);
    if (quoted === undefined) return undefined;
    firstHeads.push("{" + quoted + ":");
    heads.push("," + quoted + ":");
    if (name === "toJSON") hasToJSON = true;
  }
  return { names, sorted, firstHeads, heads, hasToJSON };
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
