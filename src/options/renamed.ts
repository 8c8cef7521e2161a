import { describe } from "./describe.js";

/**
 * An option with a deprecated second name: either name may be given, or both with one value. Returns the name that
 * was given (for messages about its value) and the value; `undefined` when neither was.
 *
 * @example const [given, value] = renamedOption(options, "retentionMs", "ttlMs");
 */
export function renamedOption(
  options: object,
  name: string,
  oldName: string,
  where = "options",
): readonly [given: string, value: unknown] {
  const value = (options as Record<string, unknown>)[name];
  const old = (options as Record<string, unknown>)[oldName];
  if (old === undefined) return [`${where}.${name}`, value];
  if (value === undefined) return [`${where}.${oldName}`, old];
  if (!Object.is(value, old)) {
    throw new TypeError(
      `${where}.${name} and ${where}.${oldName} (its deprecated name) were both given, with different values ` +
        `(${describe(value)} and ${describe(old)}); give only ${where}.${name}`,
    );
  }
  return [`${where}.${name}`, value];
}
