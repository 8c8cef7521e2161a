/**
 * The fast path of `canonicalize`. When every object's members are already in RFC 8785 order (as in anything that
 * was itself parsed from canonical JSON) and nothing needs a strict check to fail, V8's native JSON.stringify
 * prints exactly the canonical form: it writes numbers and escapes strings as RFC 8785 does. This walk only
 * decides whether that holds; it allocates nothing. Rebuilding objects in sorted order was measured slower than
 * the strict serializer, so any object out of order sends the whole value to the strict serializer.
 */
export function isCanonicalOrder(value: unknown, depth: number, maxDepth: number): boolean {
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
