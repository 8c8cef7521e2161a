import type { ToolContext } from "../harness/types.js";

const contexts = new WeakMap<object, ToolContext>();

/** Ties the `extra` handed to a wrapped tool's own handler to the harness's context for the call. */
export function attach<E extends object>(extra: E, ctx: ToolContext): E {
  contexts.set(extra, ctx);
  return extra;
}

/**
 * The harness's context of the call a wrapped tool's handler is running for, read from the handler's second
 * parameter (`extra`): `idempotencyKey` (to forward to the system it writes to), `taskId`, `attempt` and `signal`.
 * `undefined` when the tool was not wrapped by `idempotentSdkTool`.
 *
 * @example
 * tool("refund", "Refund a payment.", { paymentId: z.string() }, async (args, extra) =>
 *   text(await payments.refund(args, idemkeyContext(extra)?.idempotencyKey)))
 */
export function idemkeyContext(extra: unknown): ToolContext | undefined {
  return typeof extra === "object" && extra !== null ? contexts.get(extra) : undefined;
}
