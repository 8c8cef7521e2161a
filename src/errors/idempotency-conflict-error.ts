import { brand } from "./brand.js";
import { IdemkeyError } from "./idemkey-error.js";
import { type KeyedPositional, keyedArgs } from "./keyed-args.js";
import type { RetryHints } from "./retry-hints.js";

interface ConflictBase extends ErrorOptions {
  /** The key that was reused. */
  key: string;
}

/** A store's `effectOnce` found the key recorded with another fingerprint. */
export interface FingerprintConflict extends ConflictBase {
  by?: "fingerprint";
}

/** An HTTP owner answered 422 to the keyed request. */
export interface HttpConflict extends ConflictBase {
  by: "http";
  /** The request's URL; empty when the response had none. */
  url: string;
}

/** An MCP tool refused the call because its key was used for other arguments. */
export interface McpConflict extends ConflictBase {
  by: "mcp";
  /** The MCP tool's name. */
  tool: string;
  /** The tool's own words. */
  detail: string;
}

/** An A2A agent (`idempotentExecutor`) refused the message because its key was used for other content. */
export interface A2aConflict extends ConflictBase {
  by: "a2a";
  /** The tool's name in the harness. */
  tool: string;
  /** The agent's own words. */
  detail: string;
}

/** What an `IdempotencyConflictError` is made from: the key, and who found it reused. */
export type IdempotencyConflictErrorData = FingerprintConflict | HttpConflict | McpConflict | A2aConflict;

/**
 * The key was already used for a different request or call (other arguments, another body). Retrying with the
 * same key can never succeed: derive the key from the arguments that are really meant, or use a new key.
 */
export class IdempotencyConflictError extends IdemkeyError implements RetryHints {
  override name = "IdempotencyConflictError" as const;
  /** The key that was reused. */
  readonly key: string;
  /** Never worth retrying with the same key; read by the harness's default retry policy. */
  readonly retryable = false;

  constructor(data: IdempotencyConflictErrorData);
  /** @deprecated Pass one object, `new IdempotencyConflictError({ key })`, and the class writes the message. */
  constructor(key: string, message: string, options?: ErrorOptions);
  constructor(...args: [IdempotencyConflictErrorData] | KeyedPositional) {
    const { key, message, options } = keyedArgs(args, compose);
    super(message, options);
    this.key = key;
  }
}
brand(IdempotencyConflictError, "IdempotencyConflictError");

function compose(data: IdempotencyConflictErrorData): string {
  switch (data.by) {
    case "http":
      return (
        `${data.url || "The owner"} answered 422: this Idempotency-Key was already used for a different request. ` +
        "Retrying cannot help; call with the arguments that were meant, or a new key (another step)."
      );
    case "mcp":
      return `The MCP tool "${data.tool}" refused the call: ${data.detail}`;
    case "a2a":
      return `The A2A agent behind "${data.tool}" refused the message: ${data.detail}`;
    default:
      return (
        `key "${data.key}" was already used with another fingerprint: the request differs from the one first made ` +
        "with this key; use a new key for a new request"
      );
  }
}
