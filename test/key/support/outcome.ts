import { CanonicalizationError } from "../../../src/errors/index.js";

/** What a canonicalization produced: the text, or the error's class, path and reason, to compare two serializers. */
export function outcome(run: () => string): unknown {
  try {
    return { text: run() };
  } catch (error) {
    if (error instanceof CanonicalizationError)
      return { error: error.name, path: error.path, reason: error.reason };
    return { error: String(error) };
  }
}
