/** The deprecated positional form of an error that carries only its key: `(key, message, options)`. */
export type KeyedPositional = [key: string, message: string, options?: ErrorOptions];

/**
 * Reads the two ways of building an error whose only field is its key, the data it composes its message from or the
 * deprecated positional form, into what `Error`'s constructor and the `key` field take. `IdempotencyConflictError`
 * and `OutcomeUnknownError` share it so that the two forms keep meaning the same in both.
 */
export function keyedArgs<D extends { key: string } & ErrorOptions>(
  args: [D] | KeyedPositional,
  compose: (data: D) => string,
): { message: string; options: ErrorOptions | undefined; key: string } {
  const [first] = args;
  if (typeof first === "object") {
    const message = compose(first);
    return { message, options: "cause" in first ? { cause: first.cause } : undefined, key: first.key };
  }
  const [key, message, options] = args as KeyedPositional;
  return { message, options, key };
}
