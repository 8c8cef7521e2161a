import { AsyncLocalStorage } from "node:async_hooks";
import type { ToolContext } from "../harness/types.js";

/**
 * The harness's context of the call being run, for code the wrapped tool runs. LangChain copies and merges the
 * `RunnableConfig` on its way to a tool, so no object handed to the tool is the one the harness saw; the call's
 * async context is the one thing that reaches it unchanged.
 */
export const calls = new AsyncLocalStorage<ToolContext>();

/**
 * The harness's context of the call a tool wrapped by `idempotentTool` is running for: `idempotencyKey` (to forward to
 * the system it writes to), `taskId`, `attempt` and `signal`. `undefined` outside such a call.
 *
 * @example
 * const refund = tool(async (input) => payments.refund(input, idemkeyContext()?.idempotencyKey), { name, schema });
 */
export function idemkeyContext(): ToolContext | undefined {
  return calls.getStore();
}
