import { describe, expect, it } from "vitest";
import { createHarness, defineTool, memoryStore, OutcomeUnknownError, sha256Hex } from "../../src/index.js";
import { Attr, tracedReconciler } from "../../src/otel/index.js";
import type { ReconcilerEvent } from "../../src/reconciler/index.js";
import { otelPipeline } from "../support/otel.js";

describe("tracedReconciler", () => {
  it("counts every decision by outcome and makes one span each, with the key as a hash when asked", async () => {
    const t = otelPipeline({ hashKeys: true });

    const store = memoryStore();
    const lost = defineTool<{ n: number }, unknown>({
      name: "pay",
      effect: "unguarded",
      run: () => {
        throw new Error("socket hang up");
      },
    });
    const harness = createHarness({ store, retry: { retries: 0 } });
    const keys: string[] = [];
    for (let n = 0; n < 3; n++) {
      await expect(harness.call("task", lost, { n })).rejects.toBeInstanceOf(OutcomeUnknownError);
      keys.push(harness.key("task", lost, { n }));
    }
    const pay = defineTool<{ n: number }, unknown>({
      name: "pay",
      effect: "unguarded",
      run: () => undefined,
      reconcile: ({ n }) =>
        n === 0 ? { status: "done", result: n } : n === 1 ? { status: "not_done" } : undefined,
    });
    const own: ReconcilerEvent[] = [];
    const reconciler = tracedReconciler(
      { store, tools: [pay], id: "r-otel", onEvent: (e) => own.push(e) },
      t.telemetry,
    );
    await reconciler.sweep();
    expect(own.map((e) => e.type).sort()).toEqual(["reconciled", "reconciled", "undecided"]);

    const spans = t.spans();
    expect(spans).toHaveLength(3);
    for (const span of spans) {
      expect(span.name).toBe("reconcile pay");
      expect(span.attributes[Attr.key]).toBeUndefined();
      expect(span.attributes[Attr.by]).toBe("r-otel");
    }
    expect(new Set(spans.map((s) => s.attributes[Attr.keyHash]))).toEqual(
      new Set(keys.map((k) => sha256Hex(k))),
    );
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain(keys[0]!);

    await t.counts();
    const counts = Object.fromEntries(
      t
        .points()
        .filter((p) => p.name === "idemkey.reconciler.decisions")
        .map((p) => [String(p.attributes[Attr.reconcileOutcome]), p.value]),
    );
    expect(counts).toEqual({ done: 1, not_done: 1, undecided: 1 });
  });
});
