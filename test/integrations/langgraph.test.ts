import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { tool } from "@langchain/core/tools";
import { type BaseCheckpointSaver, Command, MemorySaver } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { createAgent, FakeToolCallingModel, humanInTheLoopMiddleware } from "langchain";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHarness, defaultModelTexts, idempotencyKey } from "../../src/index.js";
import { idempotencyMiddleware } from "../../src/langchain/index.js";
import {
  type ApprovalDecision,
  type ApprovalRequest,
  defaultTaskId,
  idemkeyContext,
  idempotentTool,
} from "../../src/langgraph/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { effectLog, effects } from "./fixtures/effect-log.js";
import { REFUND, refundGraph, refundTool } from "./fixtures/langgraph-app.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-langgraph-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (ext: string) => join(dir, `f-${++files}.${ext}`);
const child = fileURLToPath(new URL("./fixtures/langgraph-child.ts", import.meta.url));

const SAVERS: Record<string, () => BaseCheckpointSaver> = {
  "the in-memory saver": () => new MemorySaver(),
  "the SQLite saver": () => SqliteSaver.fromConnString(file("db")),
};

/**
 * Runs the thread to its interrupt, resumes it, then resumes it again from the interrupted checkpoint (what a client
 * does whose first resume's answer was lost): LangGraph runs the node from its start each time.
 */
async function runAndResumeTwice(graph: ReturnType<typeof refundGraph>, thread: string) {
  const config = { configurable: { thread_id: thread } };
  await graph.invoke({}, config);
  const interrupted = await graph.getState(config);
  expect(interrupted.next).toEqual(["pay"]);
  const first = await graph.invoke(new Command({ resume: "yes" }), config);
  const second = await graph.invoke(new Command({ resume: "yes" }), interrupted.config);
  return [first, second];
}

describe("idempotentTool in a LangGraph node that interrupts", () => {
  for (const [name, saver] of Object.entries(SAVERS)) {
    it(`resumed twice from ${name}: one refund, and both resumes see its id`, async () => {
      const log = file("jsonl");
      const harness = createHarness({ store: sqliteStore(file("db")) });
      const results = await runAndResumeTwice(refundGraph(refundTool(log, harness), saver()), "t-1");
      const key = idempotencyKey(JSON.stringify(["t-1", "pay"]), "refund", REFUND);
      expect(effects(log)).toEqual([{ seq: 1, kind: "refund", input: REFUND, key }]);
      expect(results).toEqual([
        { refund: "refund-1", answer: "yes" },
        { refund: "refund-1", answer: "yes" },
      ]);
    });

    it(`(control) the same runs with the plain tool on ${name} refund three times`, async () => {
      const log = file("jsonl");
      const results = await runAndResumeTwice(refundGraph(refundTool(log, undefined), saver()), "t-1");
      expect(effects(log).map((e) => e.kind)).toEqual(["refund", "refund", "refund"]);
      expect(results.map((r) => r.refund)).toEqual(["refund-2", "refund-3"]);
    });
  }

  for (const mode of ["idemkey", "plain"] as const) {
    it(`a process killed after the refund and before its checkpoint, then resumed: ${mode === "idemkey" ? "one refund" : "(control) a refund each time the node runs"}`, async () => {
      const checkpoints = file("db");
      const ledger = file("db");
      const log = file("jsonl");
      const ready = file("ready");
      const app = spawn(
        process.execPath,
        ["--import", "tsx", child, "t-9", checkpoints, ledger, log, ready, mode],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      app.stderr.on("data", (chunk) => {
        stderr += String(chunk);
      });
      const exited = new Promise((resolve) => app.on("exit", resolve));
      try {
        await expect.poll(() => existsSync(ready) || app.exitCode !== null, { timeout: 60_000 }).toBe(true);
        expect(stderr).toBe("");
        expect(existsSync(ready)).toBe(true);
      } finally {
        app.kill("SIGKILL");
        await exited;
      }
      expect(effects(log)).toHaveLength(1);

      // A new process: the same files, the thread resumed from its last checkpoint (its input), node and all.
      const harness = mode === "idemkey" ? createHarness({ store: sqliteStore(ledger) }) : undefined;
      const saver = SqliteSaver.fromConnString(checkpoints);
      const graph = refundGraph(refundTool(log, harness), saver);
      const config = { configurable: { thread_id: "t-9" } };
      await graph.invoke(null, config);
      expect((await graph.getState(config)).next).toEqual(["pay"]);
      const done = await graph.invoke(new Command({ resume: "yes" }), config);
      if (mode === "idemkey") {
        expect(effects(log).map((e) => e.seq)).toEqual([1]);
        expect(done).toEqual({ refund: "refund-1", answer: "yes" });
      } else {
        expect(effects(log).map((e) => e.seq)).toEqual([1, 2, 3]);
      }
    });
  }
});

describe("defaultTaskId", () => {
  it("is the thread id and the node path without LangGraph's per-task ids", () => {
    expect(
      defaultTaskId({ configurable: { thread_id: "t", checkpoint_ns: "outer:1f0-a|inner:9c2-b" } }),
    ).toBe(JSON.stringify(["t", "outer", "inner"]));
    expect(defaultTaskId({ configurable: { thread_id: "t" } })).toBe(JSON.stringify(["t"]));
    expect(() => defaultTaskId({})).toThrow(/thread_id/);
  });

  it("options are checked when the tool is wrapped, naming the option", () => {
    const plain = tool(async () => "ok", { name: "t", description: "t", schema: z.object({}) });
    const harness = createHarness();
    expect(() => idempotentTool(harness, plain, { effect: "twice" as never })).toThrow(/tool\.effect/);
    expect(() => idempotentTool(harness, plain, { effect: "keyed", taskId: "x" as never })).toThrow(
      /options\.taskId/,
    );
    expect(() => idempotentTool({} as never, plain, { effect: "keyed" })).toThrow(/harness/);
  });
});

/** The content of the last tool message of an agent's answer, as the model reads it. */
function lastToolText(state: unknown): string {
  const messages = (state as { messages: { type?: string; content: unknown }[] }).messages;
  const last = messages.filter((m) => m.type === "tool").at(-1);
  return typeof last?.content === "string" ? last.content : JSON.stringify(last?.content);
}

describe("idempotentTool with requiresApproval, in LangChain's createAgent (its ToolNode) on a checkpointer", () => {
  const config = (thread: string) => ({ configurable: { thread_id: thread } });

  function approvalAgent(log: string, harness: ReturnType<typeof createHarness>) {
    const owner = effectLog(log);
    const refund = idempotentTool(
      harness,
      tool(async (input: typeof REFUND) => owner.apply("refund", input, idemkeyContext()?.idempotencyKey), {
        name: "refund",
        description: "Refund a payment.",
        schema: z.object({ paymentId: z.string(), cents: z.number() }),
      }),
      { effect: "keyed", requiresApproval: true },
    );
    const model = new FakeToolCallingModel({
      toolCalls: [[{ name: "refund", args: REFUND, id: "call_1", type: "tool_call" }], []],
    });
    return createAgent({ model, tools: [refund], checkpointer: new MemorySaver() });
  }

  async function interrupted(agent: ReturnType<typeof approvalAgent>, thread: string) {
    const first = await agent.invoke(
      { messages: [{ role: "user", content: "Refund pay_881" }] },
      config(thread),
    );
    const [request] = (first as { __interrupt__?: { value: ApprovalRequest }[] }).__interrupt__ ?? [];
    const state = await agent.graph.getState(config(thread));
    return { request: request?.value, checkpoint: state.config };
  }

  it("stops with the call's key; the approval given in LangGraph approves that key, and a second resume runs nothing", async () => {
    const log = file("jsonl");
    const harness = createHarness({ store: sqliteStore(file("db")) });
    const agent = approvalAgent(log, harness);
    const { request, checkpoint } = await interrupted(agent, "t-a");
    const taskId = JSON.stringify(["t-a", "tools"]);
    const key = idempotencyKey(taskId, "refund", REFUND);
    expect(request).toEqual({ type: "idemkey/approval", key, tool: "refund", args: REFUND });
    expect(effects(log)).toEqual([]);
    expect(await harness.get(key)).toBeUndefined();

    const decision: ApprovalDecision = { key, approve: true, by: "ana" };
    const ran = await agent.invoke(new Command({ resume: decision }), config("t-a"));
    const again = await agent.invoke(new Command({ resume: decision }), checkpoint);
    expect(effects(log)).toEqual([{ seq: 1, kind: "refund", input: REFUND, key }]);
    // The approved call ran on the first resume; the second is answered from the ledger, and the model is told so.
    const replayed = defaultModelTexts.replayed({ tool: "refund", key });
    expect(lastToolText(ran)).not.toContain(replayed);
    expect(lastToolText(again)).toContain(replayed);
    const entry = await harness.get(key);
    expect(entry?.state).toBe("completed");
    expect(entry?.events.filter((e) => e.type === "approved")).toEqual([
      expect.objectContaining({ type: "approved", by: "ana" }),
    ]);
  });

  it("a denial stays denied when the run is resumed again, even with an approval", async () => {
    const log = file("jsonl");
    const harness = createHarness({ store: sqliteStore(file("db")) });
    const agent = approvalAgent(log, harness);
    const { request, checkpoint } = await interrupted(agent, "t-d");
    const key = request!.key;
    const denied = await agent.invoke(
      new Command({ resume: { key, approve: false, reason: "duplicate ticket" } }),
      config("t-d"),
    );
    const again = await agent.invoke(new Command({ resume: { key, approve: true } }), checkpoint);
    expect(effects(log)).toEqual([]);
    expect((await harness.get(key))?.state).toBe("denied");
    for (const result of [denied, again]) {
      const toolMessage = result.messages.find((m) => m.getType() === "tool");
      expect(String(toolMessage?.content)).toMatch(/duplicate ticket/);
    }
  });

  it("refuses a decision taken for another key, and runs nothing", async () => {
    const log = file("jsonl");
    const harness = createHarness();
    const agent = approvalAgent(log, harness);
    await interrupted(agent, "t-x");
    const result = await agent.invoke(
      new Command({ resume: { key: "0".repeat(64), approve: true } }),
      config("t-x"),
    );
    const toolMessage = result.messages.find((m) => m.getType() === "tool");
    expect(String(toolMessage?.content)).toMatch(/not the key of the call waiting for approval/);
    expect(effects(log)).toEqual([]);
  });

  it("(control) LangChain's own human-in-the-loop approval, resumed twice from the same checkpoint, refunds twice", async () => {
    const log = file("jsonl");
    const owner = effectLog(log);
    const refund = tool(async (input: typeof REFUND) => owner.apply("refund", input, undefined), {
      name: "refund",
      description: "Refund a payment.",
      schema: z.object({ paymentId: z.string(), cents: z.number() }),
    });
    const model = new FakeToolCallingModel({
      toolCalls: [[{ name: "refund", args: REFUND, id: "call_1", type: "tool_call" }], []],
    });
    const agent = createAgent({
      model,
      tools: [refund],
      checkpointer: new MemorySaver(),
      middleware: [humanInTheLoopMiddleware({ interruptOn: { refund: true } })],
    });
    await agent.invoke({ messages: [{ role: "user", content: "Refund pay_881" }] }, config("t-c"));
    const checkpoint = (await agent.graph.getState(config("t-c"))).config;
    const approve = { decisions: [{ type: "approve" }] };
    await agent.invoke(new Command({ resume: approve }), config("t-c"));
    await agent.invoke(new Command({ resume: approve }), checkpoint);
    expect(effects(log).map((e) => e.kind)).toEqual(["refund", "refund"]);
  });
});

describe("idempotencyMiddleware (idemkey/langchain) on createAgent's tool-call hook", () => {
  it("LangChain's human-in-the-loop approval resumed twice from the same checkpoint: one refund, the same answer", async () => {
    const log = file("jsonl");
    const owner = effectLog(log);
    const refund = tool(
      async (input: typeof REFUND) => owner.apply("refund", input, idemkeyContext()?.idempotencyKey),
      {
        name: "refund",
        description: "Refund a payment.",
        schema: z.object({ paymentId: z.string(), cents: z.number() }),
      },
    );
    const harness = createHarness({ store: sqliteStore(file("db")) });
    const model = new FakeToolCallingModel({
      toolCalls: [[{ name: "refund", args: REFUND, id: "call_1", type: "tool_call" }], []],
    });
    const agent = createAgent({
      model,
      tools: [refund],
      checkpointer: new MemorySaver(),
      middleware: [
        humanInTheLoopMiddleware({ interruptOn: { refund: true } }),
        idempotencyMiddleware(harness, { effects: { refund: "keyed" } }),
      ],
    });
    const config = { configurable: { thread_id: "t-m" } };
    await agent.invoke({ messages: [{ role: "user", content: "Refund pay_881" }] }, config);
    const checkpoint = (await agent.graph.getState(config)).config;
    const approve = { decisions: [{ type: "approve" }] };
    const first = await agent.invoke(new Command({ resume: approve }), config);
    const second = await agent.invoke(new Command({ resume: approve }), checkpoint);

    expect(effects(log)).toEqual([
      {
        seq: 1,
        kind: "refund",
        input: REFUND,
        key: idempotencyKey(JSON.stringify(["t-m", "tools"]), "refund", REFUND),
      },
    ]);
    const answers = [first, second].map((r) => {
      const message = r.messages.find((m) => m.getType() === "tool");
      return [message?.content, (message as { tool_call_id?: string } | undefined)?.tool_call_id];
    });
    const replayed = defaultModelTexts.replayed({
      tool: "refund",
      key: idempotencyKey(JSON.stringify(["t-m", "tools"]), "refund", REFUND),
    });
    expect(answers).toEqual([
      ["refund-1", "call_1"],
      [`${replayed}\n\nrefund-1`, "call_1"],
    ]);
  });

  it("names the option at fault", () => {
    const harness = createHarness();
    expect(() => idempotencyMiddleware(harness, { effects: { refund: "twice" as never } })).toThrow(
      /options\.effects\.refund/,
    );
    expect(() => idempotencyMiddleware(harness, {} as never)).toThrow(/options\.effects/);
    expect(() => idempotencyMiddleware(harness, { effects: {}, taskId: 1 as never })).toThrow(
      /options\.taskId/,
    );
  });
});
