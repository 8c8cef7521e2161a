import type { Message, Task } from "@a2a-js/sdk";
import {
  type AgentExecutor,
  DefaultRequestHandler,
  InMemoryTaskStore,
  ServerCallContext,
} from "@a2a-js/sdk/server";
import { describe, expect, it } from "vitest";
import {
  type A2aSendClient,
  a2aTool,
  idempotentExecutor,
  keyedMessage,
  NO_EFFECT_METADATA,
  REFUSAL_METADATA,
  Refusal,
} from "../../src/a2a/index.js";
import type { IdempotentExecutorOptions } from "../../src/a2a/server/options.js";
import { OutcomeUnknownError } from "../../src/errors/outcome-unknown-error.js";
import { ToolCallError } from "../../src/errors/tool-call-error.js";
import { createHarness } from "../../src/harness/create-harness.js";
import { memoryStore } from "../../src/store/memory.js";
import { agentCard } from "./fixtures/booking-agent.js";

/** The SDK's request handler around `executor`, called as its transports call it, as an `a2aTool` client. */
function agentOf(executor: AgentExecutor, options: Partial<IdempotentExecutorOptions> = {}) {
  const wrapped = idempotentExecutor(executor, { store: memoryStore(), ...options });
  const handler = new DefaultRequestHandler(
    agentCard("http://127.0.0.1/a2a"),
    new InMemoryTaskStore(),
    wrapped,
  );
  const client: A2aSendClient = {
    sendMessage: (params) => handler.sendMessage(params, new ServerCallContext()),
    sendMessageStream: (params) => handler.sendMessageStream(params, new ServerCallContext()),
  };
  return client;
}

/** An agent that answers a message (no task), counting its runs in `effects`. */
function replier(effects: string[], fail?: (run: number) => Error | undefined): AgentExecutor {
  return {
    async execute(ctx, bus) {
      effects.push(ctx.userMessage.messageId);
      const error = fail?.(effects.length);
      if (error) throw error;
      bus.publish({
        kind: "message",
        data: {
          messageId: `reply-${effects.length}`,
          contextId: ctx.contextId,
          taskId: "",
          role: 2,
          parts: [
            {
              content: { $case: "text", value: `run ${effects.length}` },
              mediaType: "text/plain",
              filename: "",
              metadata: undefined,
            },
          ],
          metadata: {},
          extensions: [],
          referenceTaskIds: [],
        },
      });
    },
    async cancelTask() {},
  };
}

const once = () => createHarness({ retry: { retries: 0 } });
const text = (message: Message) =>
  message.parts[0]?.content?.$case === "text" ? message.parts[0].content.value : "";

describe("idempotentExecutor and the one rule of errors", () => {
  it("an agent that answers a message: the retry gets the same message, the executor runs once", async () => {
    const effects: string[] = [];
    const tool = a2aTool(agentOf(replier(effects)), { name: "ask", effect: "keyed" });
    const first = (await once().call("t-1", tool, { text: "hi" })) as Message;
    const again = (await once().call("t-1", tool, { text: "hi" })) as Message;
    expect(effects).toHaveLength(1);
    expect(again).toEqual(first);
    expect(text(again)).toBe("run 1");
  });

  it("an executor that throws after acting: outcome_unknown for the first caller and every retry, never run again", async () => {
    const effects: string[] = [];
    const tool = a2aTool(agentOf(replier(effects, () => new Error("connection reset"))), {
      name: "ask",
      effect: "keyed",
    });
    const first = once().call("t-2", tool, { text: "pay" });
    await expect(first).rejects.toBeInstanceOf(OutcomeUnknownError);
    await expect(first).rejects.toThrow(/connection reset/);
    await expect(once().call("t-2", tool, { text: "pay" })).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(effects).toHaveLength(1);
  });

  it("an executor that throws with noEffect: true releases the key, marks its answer, and the same message runs later", async () => {
    const effects: string[] = [];
    const declined = (run: number) =>
      run <= 2 ? new ToolCallError("no table free", { noEffect: true }) : undefined;
    const client = agentOf(replier(effects, declined));
    const answer = (await client.sendMessage({ message: keyedMessage("k-3", { text: "book" }) })) as Message;
    expect(answer.metadata?.[NO_EFFECT_METADATA]).toBe(true);
    expect(text(answer)).toBe("no table free");
    const tool = a2aTool(client, { name: "ask", effect: "unguarded" });
    const key = once().key("t-3", tool, { text: "book" });
    const refused = once().call("t-3", tool, { text: "book" });
    await expect(refused).rejects.toMatchObject({ name: "ToolCallError", noEffect: true });
    // The key was released both sides: the identical call runs now.
    const ran = (await once().call("t-3", tool, { text: "book" })) as Message;
    expect(text(ran)).toBe("run 3");
    expect(effects).toHaveLength(3);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
  });

  it("a task whose executor threw after starting it: the task is failed with the outcome_unknown mark", async () => {
    const executor: AgentExecutor = {
      async execute(ctx, bus) {
        bus.publish({
          kind: "task",
          data: {
            id: ctx.taskId,
            contextId: ctx.contextId,
            status: { state: 2, message: undefined, timestamp: undefined },
            artifacts: [],
            history: [ctx.userMessage],
            metadata: {},
          },
        });
        throw new Error("worker lost");
      },
      async cancelTask() {},
    };
    const client = agentOf(executor);
    const task = (await client.sendMessage({ message: keyedMessage("k-4", { text: "go" }) })) as Task;
    expect(task.status?.state).toBe(4); // TASK_STATE_FAILED
    expect(task.status?.message?.metadata?.[REFUSAL_METADATA]).toBe(Refusal.outcomeUnknown);
    const events = [];
    for await (const event of client.sendMessageStream({ message: keyedMessage("k-4", { text: "go" }) }))
      events.push(event);
    expect(events.map((e) => e.payload?.$case)).toEqual(["message"]);
  });

  it("an unusable key, and a missing one when required, are refused without running", async () => {
    const effects: string[] = [];
    const client = agentOf(replier(effects), { required: true });
    const bad = {
      ...keyedMessage("k", { text: "x" }),
      metadata: { "dev.idemkey/idempotency-key": "has space" },
    };
    const invalid = (await client.sendMessage({ message: bad })) as Message;
    expect(invalid.metadata?.[REFUSAL_METADATA]).toBe(Refusal.keyInvalid);
    const none = (await client.sendMessage({ message: { ...bad, metadata: {} } })) as Message;
    expect(none.metadata?.[REFUSAL_METADATA]).toBe(Refusal.keyMissing);
    expect(effects).toHaveLength(0);
  });

  it("options are checked when the executor is wrapped, naming the option", () => {
    const executor = replier([]);
    expect(() => idempotentExecutor(executor, {} as never)).toThrow(/options\.store/);
    const store = memoryStore();
    expect(() => idempotentExecutor(executor, { store, leaseMs: 0 })).toThrow(/options\.leaseMs/);
    expect(() => idempotentExecutor(executor, { store, waitMs: -1 })).toThrow(/options\.waitMs/);
    expect(() => idempotentExecutor(executor, { store, required: "yes" as never })).toThrow(
      /options\.required/,
    );
    expect(() => idempotentExecutor(executor, { store, scope: "me" as never })).toThrow(/options\.scope/);
    expect(() => idempotentExecutor({} as never, { store })).toThrow(/executor/);
    expect(() => a2aTool({} as never, { name: "x", effect: "keyed" })).toThrow(/client/);
  });
});
