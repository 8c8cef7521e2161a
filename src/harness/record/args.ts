import { canonicalize } from "../../key/canonicalize.js";

/**
 * A call's arguments in whichever form a record held them: the canonical text (format 1, a new call) or the parsed
 * value (format 2). The other form is made on first use, so reading a record never pays for a form it does not need.
 */
export interface LedgerArgs {
  /** The canonical JSON text (RFC 8785). */
  text(): string;
  /** The parsed value. */
  value(): unknown;
}

export function argsFromText(text: string): LedgerArgs {
  return new TextArgs(text);
}

export function argsFromValue(value: unknown): LedgerArgs {
  return new ValueArgs(value);
}

// Classes rather than closures: every call and every replay makes one, and two closures per object cost more than
// the record's JSON.parse under tsx (which wraps each closure in `__name`).
class TextArgs implements LedgerArgs {
  private parsed: { value: unknown } | undefined = undefined;
  constructor(private readonly canonical: string) {}
  text(): string {
    return this.canonical;
  }
  value(): unknown {
    this.parsed ??= { value: JSON.parse(this.canonical) };
    return this.parsed.value;
  }
}

class ValueArgs implements LedgerArgs {
  private canonical: string | undefined = undefined;
  constructor(private readonly parsed: unknown) {}
  // Rebuilt from the value, never taken from JSON.stringify, which puts integer-like names ("9", "10") in another
  // order than RFC 8785; so a record whose members another tool reordered reads the same.
  text(): string {
    this.canonical ??= canonicalize(this.parsed);
    return this.canonical;
  }
  value(): unknown {
    return this.parsed;
  }
}
