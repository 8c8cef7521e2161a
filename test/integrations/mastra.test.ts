import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness, idempotencyKey, memoryStore } from "../../src/index.js";
import type { ApprovalRequest } from "../../src/mastra/index.js";
import { effects } from "./fixtures/effect-log.js";

const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
/** @mastra/core declares node >= 22.13 and uses APIs of it; on older Node its tests cannot run. */
const supported = major > 22 || (major === 22 && minor >= 13);
if (!supported) {
  // On stdout: a skip by design on the oldest Node of the matrix; stderr stays for faults.
  console.log(
    `idemkey/mastra: SKIPPED on Node ${process.versions.node}: @mastra/core needs Node >= 22.13. ` +
      "Run this file on the Node 22 or 24 leg of .ci/run.",
  );
}

const dir = mkdtempSync(join(tmpdir(), "idemkey-mastra-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (ext: string) => join(dir, `f-${++files}.${ext}`);
const load = () => import("./fixtures/mastra-app.js");

describe.skipIf(!supported)("idempotentMastraTool in a Mastra workflow", () => {
  it("a step that refunds and then suspends, resumed, then resumed again and resumed concurrently: one refund", async () => {
    const { REFUND, refundThenAsk, refundTool } = await load();
    const log = file("jsonl");
    const harness = createHarness();
    const workflow = refundThenAsk(refundTool(log, harness));

    const run = await workflow.createRun();
    expect((await run.start({ inputData: REFUND })).status).toBe("suspended");
    const resumed = await run.resume({ step: "pay", resumeData: { close: true } });
    expect(resumed.status).toBe("success");
    // Mastra refuses a second resume of the finished run (the fix of mastra#24796), so nothing runs again.
    await expect(run.resume({ step: "pay", resumeData: { close: true } })).rejects.toThrow(/not suspended/);

    const other = await workflow.createRun();
    await other.start({ inputData: REFUND });
    const both = await Promise.allSettled([
      other.resume({ step: "pay", resumeData: { close: true } }),
      other.resume({ step: "pay", resumeData: { close: true } }),
    ]);
    expect(both.filter((r) => r.status === "fulfilled")).toHaveLength(1);

    expect(effects(log).map((e) => e.key)).toEqual([
      idempotencyKey(run.runId, "refund", REFUND),
      idempotencyKey(other.runId, "refund", REFUND),
    ]);
    expect(resumed.status === "success" && resumed.result).toEqual({ refund: "refund-1", close: true });
  });

  it("(control) the same runs with the plain tool refund twice per run", async () => {
    const { REFUND, refundThenAsk, refundTool } = await load();
    const log = file("jsonl");
    const workflow = refundThenAsk(refundTool(log, undefined));
    const run = await workflow.createRun();
    await run.start({ inputData: REFUND });
    await run.resume({ step: "pay", resumeData: { close: true } });
    await run.resume({ step: "pay", resumeData: { close: true } }).catch(() => {});
    const other = await workflow.createRun();
    await other.start({ inputData: REFUND });
    await Promise.allSettled([
      other.resume({ step: "pay", resumeData: { close: true } }),
      other.resume({ step: "pay", resumeData: { close: true } }),
    ]);
    expect(effects(log).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
  });
});

describe.skipIf(!supported)("requireApproval, mapped onto idemkey's key-bound approval", () => {
  it("suspends with the call's key; the approval resumes it once; the ledger records who approved", async () => {
    const { REFUND, refundStep, refundTool } = await load();
    const log = file("jsonl");
    const harness = createHarness();
    const workflow = refundStep(refundTool(log, harness, true));
    const run = await workflow.createRun();
    const started = await run.start({ inputData: REFUND });
    expect(started.status).toBe("suspended");
    const key = idempotencyKey(run.runId, "refund", REFUND);
    const request = (started as { steps: Record<string, { suspendPayload?: ApprovalRequest }> }).steps.refund
      ?.suspendPayload;
    expect(request).toMatchObject({ type: "idemkey/approval", key, tool: "refund", args: REFUND });
    expect(effects(log)).toEqual([]);

    const done = await run.resume({ step: "refund", resumeData: { key, approve: true, by: "ana" } });
    expect(done.status === "success" && done.result).toEqual({ refund: "refund-1" });
    expect(effects(log)).toHaveLength(1);
    expect((await harness.get(key))?.events).toContainEqual(
      expect.objectContaining({ type: "approved", by: "ana" }),
    );
  });

  it("a denied call stays denied when the run is started again under the same run id", async () => {
    const { REFUND, refundStep, refundTool } = await load();
    const log = file("jsonl");
    // One ledger for both apps (a SQLite file in production; better-sqlite3 is built for the Node 20 of the checkout).
    const ledger = memoryStore();
    const runId = "run-denied-1";
    const first = refundStep(refundTool(log, createHarness({ store: ledger }), true));
    const run = await first.createRun({ runId });
    await run.start({ inputData: REFUND });
    const key = idempotencyKey(runId, "refund", REFUND);
    const denied = await run.resume({
      step: "refund",
      resumeData: { key, approve: false, reason: "duplicate" },
    });
    expect(denied.status).toBe("failed");

    // A restarted app: a new Mastra and harness on the same ledger, the run started again under its id.
    const again = refundStep(refundTool(log, createHarness({ store: ledger }), true));
    const rerun = await again.createRun({ runId });
    const result = await rerun.start({ inputData: REFUND });
    expect(result.status).toBe("failed");
    expect(JSON.stringify((result as { error?: unknown }).error)).toMatch(/duplicate/);
    expect(effects(log)).toEqual([]);
  });

  it("refuses a decision for another key, and runs nothing", async () => {
    const { REFUND, refundStep, refundTool } = await load();
    const log = file("jsonl");
    const workflow = refundStep(refundTool(log, createHarness(), true));
    const run = await workflow.createRun();
    await run.start({ inputData: REFUND });
    const result = await run.resume({ step: "refund", resumeData: { key: "0".repeat(64), approve: true } });
    expect(result.status).toBe("failed");
    expect(JSON.stringify((result as { error?: unknown }).error)).toMatch(/not the key of the call waiting/);
    expect(effects(log)).toEqual([]);
  });

  it("(control) Mastra's plain tool with requireApproval, as a workflow step, runs without asking", async () => {
    const { REFUND, refundStep, refundTool } = await load();
    const log = file("jsonl");
    const run = await refundStep(refundTool(log, undefined, true)).createRun();
    expect((await run.start({ inputData: REFUND })).status).toBe("success");
    expect(effects(log)).toHaveLength(1);
  });
});
