import { expect } from "vitest";
import { createHarness, defineTool, memoryStore, OutcomeUnknownError } from "../../src/index.js";
import { createReconciler } from "../../src/reconciler/index.js";

/** What an owner on `effectOnce` offers the scenario: its effect under a key, and its lookup of a key. */
export interface EffectOnceOwner {
  /** Places order `n` under `key` through `effectOnce`, in the owner's own table. */
  place(n: number, key: string): { result: { id: number } } | Promise<{ result: { id: number } }>;
  lookup(
    key: string,
  ):
    | { state: "completed"; result: { id: number } }
    | { state: "unknown" }
    | Promise<{ state: "completed"; result: { id: number } } | { state: "unknown" }>;
}

/**
 * Four orders whose answers are all lost, the even ones after they committed at the owner: the reconciler decides
 * each from the owner's lookup (two done, two not done), and the calls that follow place the odd ones and replay
 * the even ones. The caller counts the orders in the owner's table afterwards: one of each `n` in `0..3`.
 */
export async function reconcileLostOrders(owner: EffectOnceOwner): Promise<void> {
  const lost = defineTool<{ n: number }, { id: number }>({
    name: "order",
    effect: "unguarded",
    run: async (args, ctx) => {
      // Even n reach the owner and commit; every answer is lost.
      if (args.n % 2 === 0) await owner.place(args.n, ctx.idempotencyKey);
      throw new Error("socket hang up");
    },
  });
  const store = memoryStore();
  const harness = createHarness({ store, retry: { retries: 0 } });
  for (let n = 0; n < 4; n++) {
    await expect(harness.call("task", lost, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
  }
  const order = defineTool<{ n: number }, { id: number }>({
    name: "order",
    effect: "unguarded",
    run: async (args, ctx) => (await owner.place(args.n, ctx.idempotencyKey)).result,
    reconcile: async (_, ctx) => {
      const found = await owner.lookup(ctx.idempotencyKey);
      return found.state === "completed" ? { status: "done", result: found.result } : { status: "not_done" };
    },
  });
  expect(await createReconciler({ store, tools: [order] }).sweep()).toMatchObject({ done: 2, notDone: 2 });
  for (let n = 0; n < 4; n++) await harness.call("task", order, { n });
}
