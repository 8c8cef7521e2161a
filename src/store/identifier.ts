const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Table and schema names are spliced into SQL, so only plain identifiers pass; otherwise a `TypeError` naming the option. */
export function checkIdentifier(where: string, value: unknown): string {
  if (typeof value !== "string" || !IDENTIFIER.test(value)) {
    throw new TypeError(
      `${where} must be a plain SQL identifier (a letter or _, then letters, digits or _, at most 63), got ${JSON.stringify(value)}`,
    );
  }
  return value;
}
