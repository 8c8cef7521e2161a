/**
 * The canonical serializer as it stood in 0.1 (src/key/canonicalize.ts + fast-path.ts at e08c97b), kept verbatim as
 * the reference that the faster serializer must agree with: same text, same error path and reason, for any input.
 */
import { CanonicalizationError } from "../../../src/errors/canonicalization-error.js";

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

type Segment = string | number;

/** Thrown inside the walk; each container on the way out adds its segment, so the happy path pays nothing for paths. */
class Fault {
  readonly segments: Segment[] = [];
  constructor(readonly reason: string) {}
}

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
export function referenceCanonicalize(value: unknown, options?: CanonicalizeOptions): string {
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
  try {
    if (isCanonicalOrder(value, 0, maxDepth)) return JSON.stringify(value);
    return serialize(value, 0, maxDepth, "");
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

const DEPTH_REASON = "depth";

function serialize(value: unknown, depth: number, maxDepth: number, key: string | number): string {
  switch (typeof value) {
    case "string":
      if (!value.isWellFormed())
        throw new Fault("string contains a lone surrogate, which UTF-8 cannot encode");
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new Fault(`${value} is not a JSON number`);
      // ECMAScript's Number::toString is exactly RFC 8785's number form, and it prints -0 as "0".
      return "" + value;
    case "boolean":
      return value ? "true" : "false";
    case "object":
      if (value === null) return "null";
      return serializeObject(value, depth, maxDepth, key);
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

function serializeObject(value: object, depth: number, maxDepth: number, key: string | number): string {
  let target: unknown = value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") {
    // As JSON.stringify: convert once, then serialize the result without calling its own toJSON.
    target = toJSON.call(value, String(key));
    if (typeof target !== "object" || target === null) return serialize(target, depth, maxDepth, key);
  }
  if (depth >= maxDepth) throw new Fault(DEPTH_REASON);
  const proto = Object.getPrototypeOf(target);
  if (proto === Array.prototype) return serializeArray(target as unknown[], depth + 1, maxDepth);
  if (proto === Object.prototype || proto === null || isForeignPlainObject(target, proto)) {
    return serializeMembers(target as Record<string, unknown>, depth + 1, maxDepth);
  }
  if (isForeignArray(target, proto)) return serializeArray(target as unknown[], depth + 1, maxDepth);
  throw new Fault(describeNonPlain(target as object));
}

function serializeArray(array: unknown[], depth: number, maxDepth: number): string {
  const length = array.length;
  let out = "[";
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
      if (i > 0) out += ",";
      out += serialize(element, depth, maxDepth, i);
    }
  } catch (error) {
    if (error instanceof Fault) error.segments.push(i);
    throw error;
  }
  return out + "]";
}

function serializeMembers(object: Record<string, unknown>, depth: number, maxDepth: number): string {
  const names = Object.keys(object);
  if (names.length > 1) sortNames(names);
  let out = "{";
  let first = true;
  let name = "";
  try {
    for (name of names) {
      const member = object[name];
      if (member === undefined) continue;
      out += (first ? "" : ",") + quoteName(name) + ":" + serialize(member, depth, maxDepth, name);
      first = false;
    }
  } catch (error) {
    if (error instanceof Fault) error.segments.push(name);
    throw error;
  }
  return out + "}";
}

/**
 * Orders member names by UTF-16 code units (RFC 8785 section 3.2.3): JavaScript's `<` on strings compares code
 * units. Insertion sort, because tool arguments have few members and often arrive already in order.
 */
function sortNames(names: string[]): void {
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

const SHORT = 64;

/**
 * A JSON string literal as JSON.stringify (and RFC 8785) writes it. Short strings without anything to escape,
 * the common case, are quoted by hand: calling into JSON.stringify costs more than scanning them.
 */
function quote(text: string, loneSurrogate: string): string {
  const length = text.length;
  if (length <= SHORT) {
    let plain = true;
    for (let i = 0; i < length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) {
        plain = false;
        break;
      }
    }
    if (plain) return '"' + text + '"';
  }
  if (!text.isWellFormed()) throw new Fault(loneSurrogate);
  return JSON.stringify(text);
}

/** Member names repeat across the objects of an array and across calls; their quoted form is worth keeping. */
const quotedNames = new Map<string, string>();
const QUOTED_NAMES_LIMIT = 4096;

function quoteName(name: string): string {
  let quoted = quotedNames.get(name);
  if (quoted === undefined) {
    quoted = quote(name, "member name contains a lone surrogate, which UTF-8 cannot encode");
    if (quotedNames.size >= QUOTED_NAMES_LIMIT) quotedNames.clear();
    quotedNames.set(name, quoted);
  }
  return quoted;
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
function isCanonicalOrder(value: unknown, depth: number, maxDepth: number): boolean {
  switch (typeof value) {
    case "string":
      return value.isWellFormed();
    case "number":
      return Number.isFinite(value);
    case "boolean":
      return true;
    case "object": {
      if (value === null) return true;
      if (depth >= maxDepth) return false;
      const proto = Object.getPrototypeOf(value);
      if (proto === Array.prototype) return arrayInOrder(value as unknown[], depth + 1, maxDepth);
      if (proto !== Object.prototype && proto !== null) return false;
      return membersInOrder(value as Record<string, unknown>, depth + 1, maxDepth);
    }
    default:
      return false;
  }
}

function arrayInOrder(array: unknown[], depth: number, maxDepth: number): boolean {
  for (let i = 0; i < array.length; i++) {
    const element = array[i];
    if (element === undefined || !isCanonicalOrder(element, depth, maxDepth)) return false;
  }
  return true;
}

function membersInOrder(object: Record<string, unknown>, depth: number, maxDepth: number): boolean {
  if (typeof object.toJSON === "function") return false;
  let previous = "";
  let first = true;
  // for-in walks own enumerable names in the same order as Object.keys and JSON.stringify, without an array.
  for (const name in object) {
    if (!first && !(previous < name)) return false;
    if (!Object.hasOwn(object, name) || !name.isWellFormed()) return false;
    first = false;
    previous = name;
    const member = object[name];
    // JSON.stringify leaves out undefined members, as canonicalize does.
    if (member !== undefined && !isCanonicalOrder(member, depth, maxDepth)) return false;
  }
  return true;
}
