/**
 * The mark of idemkey's errors, registered with `Symbol.for` so that it is the same symbol in every realm (a
 * `node:vm` context, a worker's structured copy aside) and in every copy of the package (two versions in one
 * `node_modules`, an ESM and a CJS load), where `instanceof` fails. Each class of the family sets it on its own
 * prototype to its name, so that a guard finds a class anywhere on an error's prototype chain, subclasses included.
 */
export const FAMILY: unique symbol = Symbol.for("idemkey.error") as never;

/** Marks `cls` as the family member called `name`; its instances, and its subclasses' instances, carry the mark. */
export function brand(cls: { prototype: object }, name: string): void {
  Object.defineProperty(cls.prototype, FAMILY, { value: name, enumerable: false });
}

/** Whether `value`'s prototype chain holds the family member `name`, read from the marks, never from `instanceof`. */
export function branded(value: unknown, name: string): boolean {
  if (typeof value !== "object" || value === null) return false;
  // A bounded walk: a hostile or cyclic proxy chain must not hang the guard.
  for (let proto: unknown = Object.getPrototypeOf(value), depth = 0; proto !== null && depth < 32; depth++) {
    if (typeof proto !== "object" && typeof proto !== "function") return false;
    if (Object.hasOwn(proto as object, FAMILY) && (proto as Record<symbol, unknown>)[FAMILY] === name)
      return true;
    proto = Object.getPrototypeOf(proto);
  }
  return false;
}
