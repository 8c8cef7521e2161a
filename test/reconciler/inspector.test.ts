import { afterEach, describe, expect, it } from "vitest";
import { createHarness, defineTool, memoryStore, OutcomeUnknownError } from "../../src/index.js";
import { describeEvent } from "../../src/inspector/page/client/format.js";
import { createReconciler } from "../../src/reconciler/index.js";
import { type Client, serve } from "../inspector/support.js";

let client: Client | undefined;
afterEach(async () => {
  await client?.close();
  client = undefined;
});

describe("what a person sees of the reconciler's work", () => {
  it("the inspector shows an undecided record's reason and a decided one's outcome, by and evidence", async () => {
    const store = memoryStore();
    const harness = createHarness({ store, retry: { retries: 0 } });
    const lost = defineTool<{ n: number }, unknown>({
      name: "refund",
      effect: "unguarded",
      run: () => {
        throw new Error("socket hang up");
      },
    });
    for (const n of [0, 1]) {
      await expect(harness.call("task", lost, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
    }
    const refund = defineTool<{ n: number }, unknown>({
      name: "refund",
      effect: "unguarded",
      run: () => undefined,
      reconcile: ({ n }) => {
        if (n === 0) return { status: "done", result: { refunded: true }, evidence: { ledgerRow: 17 } };
        throw new Error("the payments API answered 503");
      },
    });
    await createReconciler({ store, tools: [refund], id: "night-shift" }).sweep();

    client = await serve({ store, user: "ops", pollMs: 50 });
    const undecided = await client.json(
      "/api/calls/:key",
      `/api/calls/${harness.key("task", lost, { n: 1 })}`,
    );
    const last = (undecided as { state: string; events: Parameters<typeof describeEvent>[0][] }).events.at(
      -1,
    )!;
    expect((undecided as { state: string }).state).toBe("outcome_unknown");
    expect(describeEvent(last)).toBe(
      "reconcile undecided by night-shift — reconcile threw: Error: the payments API answered 503 (reconciler try 1)",
    );
    const decided = await client.json("/api/calls/:key", `/api/calls/${harness.key("task", lost, { n: 0 })}`);
    const resolved = (decided as { events: Parameters<typeof describeEvent>[0][] }).events.at(-1)!;
    expect(describeEvent(resolved)).toBe(
      'resolved by night-shift (reconcile: done) evidence: {"ledgerRow":17}',
    );
  });
});
