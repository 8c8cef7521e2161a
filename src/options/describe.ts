/**
 * A value as a `TypeError` names what it got: `"abc"`, `an empty string`, `-1`, `NaN`, `null`, `an object`. The
 * value itself where it is short and safe to print, its kind otherwise, so a message never dumps an options object.
 */
export function describe(value: unknown): string {
  switch (typeof value) {
    case "string":
      if (value === "") return "an empty string";
      return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
    case "number":
    case "bigint":
    case "boolean":
    case "undefined":
      return String(value);
    case "function":
      return "a function";
    case "symbol":
      return "a symbol";
    default:
      return value === null ? "null" : Array.isArray(value) ? "an array" : "an object";
  }
}

/**
 * What was thrown, as a message can quote it: the error's message, or for one without a message (node-redis's
 * `TimeoutError` has none) its class name and code, so that a message never reads "failed: .".
 */
export function describeThrown(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.message) return error.message;
  const kind =
    error.constructor?.name && error.constructor.name !== "Error" ? error.constructor.name : error.name;
  const code = (error as { code?: unknown }).code;
  return `${kind || "Error"} with no message${code === undefined ? "" : ` (code ${String(code)})`}`;
}
