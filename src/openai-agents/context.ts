import type { ToolContext } from "../harness/types.js";

const contexts = new WeakMap<object, ToolContext>();

/** Ties the call details handed to a wrapped tool's own `execute` to the harness's context for the call. */
export function attach<D extends object>(details: D, ctx: ToolContext): D {
  contexts.set(details, ctx);
  return details;
}

/**
 * The harness's context of the call a wrapped tool's `execute` is running for, read from the call details (its third
 * parameter): `idempotencyKey` (to forward to the system it writes to), `taskId`, `attempt` and `signal`.
 * `undefined` when the tool was not made by `idempotentTool`.
 *
 * @example
 * execute: async (input, runContext, details) => {
 *   const key = idemkeyContext(details)?.idempotencyKey;
 *   return payments.refund(input, { idempotencyKey: key });
 * }
 */
export function idemkeyContext(details: object | undefined): ToolContext | undefined {
  return typeof details === "object" && details !== null ? contexts.get(details) : undefined;
}
