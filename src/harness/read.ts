import { type Call, emit, planRetry, toolContext } from "./call.js";

/** A `read` tool: no ledger and no claim, only the retry policy. */
export async function runRead<A, R>(call: Call<A, R>): Promise<R> {
  let failures = 0;
  for (let attempt = 1; ; attempt++) {
    call.signal?.throwIfAborted();
    try {
      const value = await call.tool.run(call.args, toolContext(call, attempt));
      emit(call, { type: "executed", attempt, recorded: false, argsDiffer: false });
      return value;
    } catch (error) {
      failures++;
      const delayMs = await planRetry(call, attempt, failures, error);
      if (delayMs === undefined) {
        emit(call, { type: "failed", attempt, error });
        throw error;
      }
      emit(call, { type: "retried", attempt, delayMs, error });
      await call.core.sleep(delayMs, call.signal);
    }
  }
}
