import { IdemkeyError } from "../errors/idemkey-error.js";

/** A usage or input problem: one line on stderr, exit code 2, never a stack trace. */
export class UsageError extends IdemkeyError {
  override name = "UsageError" as const;
}

/** The input was fine but the world was not (a store that does not answer, a port in use): one line, exit 1. */
export class RunError extends IdemkeyError {
  override name = "RunError" as const;
}
