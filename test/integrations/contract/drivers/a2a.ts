import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Message, Task } from "@a2a-js/sdk";
import { type Client, ClientFactory } from "@a2a-js/sdk/client";
import { type AgentExecutor, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import express from "express";
import {
  a2aTool,
  IDEMPOTENCY_KEY_METADATA,
  idempotentExecutor,
  keyedMessage,
  REFUSAL_METADATA,
  Refusal,
} from "../../../../src/a2a/index.js";
import { idempotencyKey } from "../../../../src/index.js";
import { agentCard } from "../../../a2a/fixtures/booking-agent.js";
import type { Driver } from "../driver.js";
import { LEASE_MS, type Seen, textOf, type World } from "../world.js";

const NOT_MODEL_FACING =
  "it makes a harness Tool: the application's own harness.call hands the result to its code, which shows the model";
const NO_APPROVAL = "A2A has no approval of a call in the protocol, and a2aTool takes no requiresApproval";
const WIRE_IS_JSON = "answers cross the A2A wire as JSON: the client never holds a value JSON cannot";

/**
 * The spec's tool as an agent: the owner's receipt as the text of its answer message. A failure is answered as a
 * failed task, as an agent that catches its errors does (the SDK would otherwise make the same task of the throw);
 * behind `idempotentExecutor` it throws instead, with `noEffect: true` where the tool declares the error so.
 */
function ownerExecutor(world: World, owner: "throws" | "answers"): AgentExecutor {
  return {
    async execute(ctx, bus) {
      const key = ctx.userMessage.metadata?.[IDEMPOTENCY_KEY_METADATA] as string | undefined;
      let text: string;
      try {
        text = JSON.stringify(await world.owner.act(key));
      } catch (error) {
        if (owner === "throws") {
          if (world.spec.noEffect?.(error) === true) Object.assign(error as object, { noEffect: true });
          throw error;
        }
        const message = reply(ctx.contextId, ctx.taskId, String((error as Error).message));
        bus.publish({
          kind: "task",
          data: {
            id: ctx.taskId,
            contextId: ctx.contextId,
            status: { state: 4, message, timestamp: new Date().toISOString() },
            artifacts: [],
            history: [ctx.userMessage],
            metadata: {},
          },
        });
        return;
      }
      bus.publish({ kind: "message", data: reply(ctx.contextId, "", text) });
    },
    async cancelTask() {},
  };
}

function reply(contextId: string, taskId: string, text: string): Message {
  return {
    messageId: globalThis.crypto.randomUUID(),
    contextId,
    taskId,
    role: 2,
    parts: [
      { content: { $case: "text", value: text }, mediaType: "text/plain", filename: "", metadata: undefined },
    ],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The SDK's server for `executor` on a loopback port, and the SDK's client for it. */
async function serve(executor: AgentExecutor): Promise<{ client: Client; close: () => Promise<void> }> {
  const handler = new DefaultRequestHandler(
    agentCard("http://127.0.0.1/a2a"),
    new InMemoryTaskStore(),
    executor,
  );
  const app = express();
  app.use("/a2a", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  const { port } = server.address() as AddressInfo;
  const client = await new ClientFactory().createFromAgentCard(agentCard(`http://127.0.0.1:${port}/a2a`));
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { client, close };
}

/** `a2aTool` through the harness, against an agent that dedupes on the key as the fake owner does. */
export const a2aToolDriver: Driver = {
  name: "a2aTool (A2A SDK client and server, JSON-RPC)",
  notModelFacing: NOT_MODEL_FACING,
  cannot: { approval: NO_APPROVAL, "non-JSON result": WIRE_IS_JSON },
  async open(world) {
    const { client, close } = await serve(ownerExecutor(world, "answers"));
    const harness = world.harness();
    const { name, effect, noEffect } = world.spec;
    const tool = a2aTool<object>(client, {
      name,
      effect,
      noEffect,
      message: (args) => ({ text: JSON.stringify(args) }),
    });
    return {
      async call(args, options) {
        return { text: textOf(await harness.call(world.taskId, tool, args, options)) };
      },
      close,
    };
  },
};

/** What a plain client saw of an agent's answer; the outcome_unknown refusal as the neutral name the table checks. */
function seen(answer: Message | Task): Seen {
  const marked = "messageId" in answer ? answer : answer.status?.message;
  const text = textOf(answer);
  const refusal = marked?.metadata?.[REFUSAL_METADATA];
  if (refusal === undefined && ("messageId" in answer || answer.status?.state !== 4)) return { text };
  const name = refusal === Refusal.outcomeUnknown ? "OutcomeUnknownError" : "A2aRefusal";
  return { text, error: Object.assign(new Error(text), { name, answer }) };
}

/** `idempotentExecutor` as the owner: the executor is the effect, a plain SDK client sends the harness's key. */
export const idempotentExecutorDriver: Driver = {
  name: "idempotentExecutor (A2A SDK server, JSON-RPC)",
  notModelFacing: "it is the owner: the client that called it tells its model (a2aTool's row)",
  cannot: { approval: NO_APPROVAL },
  async open(world) {
    const executor = idempotentExecutor(ownerExecutor(world, "throws"), {
      store: world.store(),
      leaseMs: LEASE_MS,
      pollMs: 5,
      rerunAfterTakeover: world.spec.effect === "keyed",
      onError: () => {
        if (world.faults.throwingHook) throw new Error("the telemetry exporter is down");
      },
    });
    const { client, close } = await serve(executor);
    return {
      async call(args, options) {
        const key = idempotencyKey(world.taskId, world.spec.name, args);
        const message = keyedMessage(key, { text: JSON.stringify(args) });
        return seen(await client.sendMessage({ message } as never, options));
      },
      close,
    };
  },
};
