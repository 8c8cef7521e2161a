import { CanonicalizationError } from "../errors/canonicalization-error.js";
import { DEPTH_REASON, Fault, type Segment } from "./fault.js";
import { inOrder, shapeOf, sortNames } from "./shape-cache.js";
import {
  close,
  open,
  text,
  writeAscii,
  writeByte,
  writeEncoded,
  writeNumber,
  writeQuoted,
} from "./writer.js";

export interface CanonicalizeOptions {
  /**
   * How many arrays and objects may nest inside one another. Deeper input throws `CanonicalizationError` instead of
   * exhausting the call stack: tool arguments are never legitimately this deep, and a cycle reaches the limit
   * quickly, where it is then reported as a cycle with its path.
   * @default 1000
   */
  maxDepth?: number;
}

export const DEFAULT_MAX_DEPTH = 1000;

/**
 * The RFC 8785 (JSON Canonicalization Scheme) form of `value`: members sorted by the UTF-16 code units of their
 * names, numbers as ECMAScript prints them, strings escaped as `JSON.stringify` does, no whitespace.
 *
 * Strict where `JSON.stringify` is lossy: `NaN`, infinities, BigInt, functions, symbols, lone surrogates, cycles,
 * `Map`, `Set`, typed arrays, sparse holes, `undefined` in an array and class instances throw
 * `CanonicalizationError` with the path at fault. Objects with `toJSON` (such as `Date`) are converted first, and a
 * member whose value is `undefined` is left out, as `JSON.stringify` does.
 *
 * @example canonicalize({ b: [1, 2.50], a: "€" }) // '{"a":"€","b":[1,2.5]}'
 */
export function canonicalize(value: unknown, options?: CanonicalizeOptions): string {
  return canonicalizeAt(value, "$", resolveMaxDepth(options?.maxDepth));
}

export function resolveMaxDepth(maxDepth: number | undefined): number {
  if (maxDepth === undefined) return DEFAULT_MAX_DEPTH;
  if (typeof maxDepth !== "number" || !(maxDepth >= 1) || !Number.isInteger(maxDepth)) {
    throw new TypeError(`options.maxDepth must be a positive integer, got ${String(maxDepth)}`);
  }
  return maxDepth;
}

/** Canonicalize with paths reported from `root` (the key derivation reports `$.args...`). */
export function canonicalizeAt(value: unknown, root: string, maxDepth: number): string {
  const start = open();
  try {
    writeCanonical(value, root, maxDepth);
    return text(start);
  } finally {
    close(start);
  }
}

/** Writes the canonical form of `value` to the open write (see writer.ts), with paths reported from `root`. */
export function writeCanonical(value: unknown, root: string, maxDepth: number): void {
  try {
    serialize(value, 0, maxDepth, "");
  } catch (error) {
    if (error instanceof Fault) {
      const segments = error.segments.reverse();
      if (error.reason === DEPTH_REASON) {
        const cycle = findCycle(value);
        if (cycle) throw new CanonicalizationError(formatPath(root, cycle.segments), cycle.reason);
        throw new CanonicalizationError(
          formatPath(root, segments),
          `nested deeper than ${maxDepth} levels (options.maxDepth)`,
        );
      }
      throw new CanonicalizationError(formatPath(root, segments), error.reason);
    }
    if (error instanceof RangeError && /call stack/i.test(error.message)) {
      const cycle = findCycle(value);
      if (cycle)
        throw new CanonicalizationError(formatPath(root, cycle.segments), cycle.reason, { cause: error });
      throw new CanonicalizationError(root, "nested too deep for the call stack; lower options.maxDepth", {
        cause: error,
      });
    }
    throw error;
  }
}

const LONE_IN_VALUE = "string contains a lone surrogate, which UTF-8 cannot encode";
const LONE_IN_NAME = "member name contains a lone surrogate, which UTF-8 cannot encode";

const objectPrototype = Object.prototype as { toJSON?: unknown };
const arrayPrototype = Array.prototype;

const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

function serialize(value: unknown, depth: number, maxDepth: number, key: string | number): void {
  switch (typeof value) {
    case "string":
      writeQuoted(value, LONE_IN_VALUE);
      return;
    case "number":
      if (!Number.isFinite(value)) throw new Fault(`${value} is not a JSON number`);
      writeNumber(value);
      return;
    case "boolean":
      writeAscii(value ? "true" : "false");
      return;
    case "object":
      if (value === null) {
        writeAscii("null");
        return;
      }
      serializeObject(value, depth, maxDepth, key);
      return;
    case "bigint":
      throw new Fault("a BigInt is not a JSON number; convert it to a string or a safe integer");
    case "undefined":
      throw new Fault("undefined is not a JSON value");
    case "function":
      throw new Fault("a function is not a JSON value");
    default:
      throw new Fault("a symbol is not a JSON value");
  }
}

/**
 * Plain objects and arrays of this realm take the direct paths. Reading `value.toJSON` on every object was a
 * megamorphic load (a plain object's `toJSON` can only be its own member, or Object.prototype's when someone put one
 * there, and both are checked); anything else goes to `serializeConverted`, which does what JSON.stringify does.
 */
function serializeObject(value: object, depth: number, maxDepth: number, key: string | number): void {
  const proto = Object.getPrototypeOf(value);
  if (proto === objectPrototype ? objectPrototype.toJSON === undefined : proto === null) {
    serializePlain(value as Record<string, unknown>, depth, maxDepth, key);
  } else if (proto === arrayPrototype && (value as { toJSON?: unknown }).toJSON === undefined) {
    if (depth >= maxDepth) throw new Fault(DEPTH_REASON);
    serializeArray(value as unknown[], depth + 1, maxDepth);
  } else {
    serializeConverted(value, depth, maxDepth, key);
  }
}

/** The general case: `toJSON` first, then plain data of this or another realm; anything else is not JSON. */
function serializeConverted(value: object, depth: number, maxDepth: number, key: string | number): void {
  let target: unknown = value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") {
    // As JSON.stringify: convert once, then serialize the result without calling its own toJSON.
    target = toJSON.call(value, String(key));
    if (typeof target !== "object" || target === null) {
      serialize(target, depth, maxDepth, key);
      return;
    }
  }
  if (depth >= maxDepth) throw new Fault(DEPTH_REASON);
  const proto = Object.getPrototypeOf(target);
  if (proto === Array.prototype) {
    serializeArray(target as unknown[], depth + 1, maxDepth);
    return;
  }
  if (proto === Object.prototype || proto === null || isForeignPlainObject(target, proto)) {
    serializeMembers(target as Record<string, unknown>, Object.keys(target as object), depth + 1, maxDepth);
    return;
  }
  if (isForeignArray(target, proto)) {
    serializeArray(target as unknown[], depth + 1, maxDepth);
    return;
  }
  throw new Fault(describeNonPlain(target as object));
}

function serializeArray(array: unknown[], depth: number, maxDepth: number): void {
  const length = array.length;
  writeByte(OPEN_ARRAY);
  let i = 0;
  try {
    for (; i < length; i++) {
      const element = array[i];
      if (element === undefined) {
        throw new Fault(
          i in array
            ? "undefined in an array is not JSON (JSON.stringify would turn it into null)"
            : "a hole in a sparse array is not JSON (JSON.stringify would turn it into null)",
        );
      }
      if (i > 0) writeByte(COMMA);
      serialize(element, depth, maxDepth, i);
    }
  } catch (error) {
    if (error instanceof Fault) error.segments.push(i);
    throw error;
  }
  writeByte(CLOSE_ARRAY);
}

/** A plain object of this realm whose prototype has no `toJSON`: through the shape cache when its shape is known. */
function serializePlain(
  object: Record<string, unknown>,
  depth: number,
  maxDepth: number,
  key: string | number,
): void {
  const names = Object.keys(object);
  if (names.length === 0) {
    if (depth >= maxDepth) throw new Fault(DEPTH_REASON);
    writeAscii("{}");
    return;
  }
  const shape = shapeOf(names);
  if (shape === undefined || shape.hasToJSON) {
    if (names.includes("toJSON") && typeof object.toJSON === "function") {
      serializeConverted(object, depth, maxDepth, key);
      return;
    }
    if (depth >= maxDepth) throw new Fault(DEPTH_REASON);
    // shapeOf may have kept `names`: sort a copy, and only when it is out of order.
    serializeMembers(object, inOrder(names) ? names : names.slice(), depth + 1, maxDepth);
    return;
  }
  if (depth >= maxDepth) throw new Fault(DEPTH_REASON);
  const sorted = shape.sorted;
  const count = sorted.length;
  const { heads, headEnds, ascii } = shape;
  let first = true;
  let i = 0;
  try {
    for (; i < count; i++) {
      const member = object[sorted[i]!];
      if (member === undefined) continue;
      if (first) {
        // The head without its comma, after the brace.
        writeByte(OPEN_OBJECT);
        writeEncoded(heads, i === 0 ? 1 : headEnds[i - 1]! + 1, headEnds[i]!, ascii);
      } else writeEncoded(heads, i === 0 ? 0 : headEnds[i - 1]!, headEnds[i]!, ascii);
      first = false;
      serialize(member, depth + 1, maxDepth, sorted[i]!);
    }
  } catch (error) {
    if (error instanceof Fault) error.segments.push(sorted[i]!);
    throw error;
  }
  if (first) writeAscii("{}");
  else writeByte(CLOSE_OBJECT);
}

/** Members in RFC 8785 order, without the cache; `names` is sorted in place. */
function serializeMembers(
  object: Record<string, unknown>,
  names: string[],
  depth: number,
  maxDepth: number,
): void {
  if (names.length > 1) sortNames(names);
  writeByte(OPEN_OBJECT);
  let first = true;
  let name = "";
  try {
    for (name of names) {
      const member = object[name];
      if (member === undefined) continue;
      if (!first) writeByte(COMMA);
      writeQuoted(name, LONE_IN_NAME);
      writeByte(COLON);
      first = false;
      serialize(member, depth, maxDepth, name);
    }
  } catch (error) {
    if (error instanceof Fault) error.segments.push(name);
    throw error;
  }
  writeByte(CLOSE_OBJECT);
}

/** A plain object from another realm (a `vm` context, an iframe): its prototype is that realm's Object.prototype. */
function isForeignPlainObject(value: unknown, proto: object): boolean {
  return Object.getPrototypeOf(proto) === null && Object.prototype.toString.call(value) === "[object Object]";
}

/** An array from another realm: its prototype is that realm's Array.prototype (itself an array), not a subclass's. */
function isForeignArray(value: unknown, proto: object | null): boolean {
  if (!Array.isArray(value) || !Array.isArray(proto)) return false;
  const objectPrototype = Object.getPrototypeOf(proto);
  return objectPrototype !== null && Object.getPrototypeOf(objectPrototype) === null;
}

function describeNonPlain(value: object): string {
  if (value instanceof Map)
    return "a Map is not JSON; convert it with Object.fromEntries() or to an array of entries";
  if (value instanceof Set) return "a Set is not JSON; convert it to an array";
  if (value instanceof WeakMap || value instanceof WeakSet) return "a WeakMap or WeakSet is not JSON";
  if (ArrayBuffer.isView(value))
    return "a typed array or DataView is not JSON; encode the bytes (base64) or use an array";
  if (
    value instanceof ArrayBuffer ||
    Object.prototype.toString.call(value) === "[object SharedArrayBuffer]"
  ) {
    return "an ArrayBuffer is not JSON; encode the bytes (base64)";
  }
  if (value instanceof Number || value instanceof String || value instanceof Boolean) {
    return "a boxed primitive is not JSON; pass the primitive value";
  }
  if (Array.isArray(value)) return "an Array subclass is not JSON; pass a plain array";
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  const what =
    typeof name === "string" && name !== "" ? `a ${name} instance` : "an object with a custom prototype";
  return `${what} is not JSON; only plain objects and arrays are (give it a toJSON method or convert it)`;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export function formatPath(root: string, segments: readonly Segment[]): string {
  let path = root;
  for (const segment of segments) {
    if (typeof segment === "number") path += `[${segment}]`;
    else path += IDENTIFIER.test(segment) ? `.${segment}` : `[${JSON.stringify(segment)}]`;
  }
  return path;
}

/**
 * Finds the first reference back to an ancestor with an explicit stack, so that it works however deep the input
 * is. Only called once the walk has failed on depth; `toJSON` is not called again here.
 */
function findCycle(root: unknown): { segments: Segment[]; reason: string } | undefined {
  if (typeof root !== "object" || root === null) return undefined;
  type Frame = { object: object; segment: Segment; entries: [Segment, unknown][]; next: number };
  const stack: Frame[] = [{ object: root, segment: "", entries: entriesOf(root), next: 0 }];
  const depthOf = new Map<object, number>([[root, 0]]);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.next >= frame.entries.length) {
      stack.pop();
      depthOf.delete(frame.object);
      continue;
    }
    const [segment, child] = frame.entries[frame.next++]!;
    if (typeof child !== "object" || child === null) continue;
    const ancestor = depthOf.get(child);
    if (ancestor !== undefined) {
      const segments = [...stack.slice(1).map((f) => f.segment), segment];
      return { segments, reason: `cycle: refers back to ${formatPath("$", segments.slice(0, ancestor))}` };
    }
    depthOf.set(child, stack.length);
    stack.push({ object: child, segment, entries: entriesOf(child), next: 0 });
  }
  return undefined;
}

function entriesOf(value: object): [Segment, unknown][] {
  if (Array.isArray(value)) return value.map((element, index) => [index, element]);
  if (value instanceof Map || value instanceof Set || ArrayBuffer.isView(value)) return [];
  return Object.keys(value).map((name) => [name, (value as Record<string, unknown>)[name]]);
}
