import { UsageError } from "./errors.js";

/** A flag's text as a whole number of at least `min`, `undefined` when the flag is absent. */
export function whole(flag: string, text: string | undefined, min: number): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(`${flag} must be a whole number of at least ${min}, got "${text}"`);
  }
  return value;
}
