import type { ToolContext } from "../harness/types.js";

const contexts = new WeakMap<object, ToolContext>();

/** Ties the execution options handed to a wrapped tool's own `execute` to the harness's context for the call. */
export function attach<O extends object>(options: O, ctx: ToolContext): O {
  contexts.set(options, ctx);
  return options;
}

/**
 * The harness's context of the call a wrapped tool's `execute` is running for, read from the execution options it
 * received: `idempotencyKey` (to forward to the system it writes to), `taskId`, `attempt` and `signal`. `undefined`
 * when the tool was not called through `idempotentTools`.
 *
 * @example
 * execute: async (input, options) => {
 *   const key = idemkeyContext(options)?.idempotencyKey;
 *   return mailer.send(input, { headers: key ? { "Idempotency-Key": key } : {} });
 * }
 */
export function idemkeyContext(options: object): ToolContext | undefined {
  return typeof options === "object" && options !== null ? contexts.get(options) : undefined;
}
