import { AsyncLocalStorage } from "node:async_hooks";
import type { ToolContext } from "../harness/types.js";

/**
 * The harness's context of the call being run. Mastra rebuilds the execution context on its way into a tool's
 * `execute` (a tool run as a step gets it re-organised under `workflow`), so no object handed to the tool is the one
 * the harness saw; the call's async context is the one thing that reaches it unchanged.
 */
export const calls = new AsyncLocalStorage<ToolContext>();

/**
 * The harness's context of the call a tool wrapped by `idempotentMastraTool` is running for: `idempotencyKey` (to
 * forward to the system it writes to), `taskId`, `attempt` and `signal`. `undefined` outside such a call.
 *
 * @example
 * execute: async (input) => payments.refund(input, idemkeyContext()?.idempotencyKey)
 */
export function idemkeyContext(): ToolContext | undefined {
  return calls.getStore();
}
