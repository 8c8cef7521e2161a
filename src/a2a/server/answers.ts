import type { Message } from "@a2a-js/sdk";
import type { AgentExecutionEvent, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import { toJsonText } from "../bytes-json.js";
import type { A2aAnswer, A2aEvent } from "../fold.js";
import { IDEMPOTENCY_KEY_METADATA, Role, TaskState } from "../meta.js";

/**
 * An answer the wrapper gives instead of the executor's (a refusal, a no-effect failure), with its mark in the
 * metadata: a message when no task was started, else the started task's status set to failed with that message,
 * so that a stream that began with the task stays a well-formed task stream.
 */
export function publishMarked(
  bus: ExecutionEventBus,
  requestContext: RequestContext,
  started: A2aAnswer | undefined,
  text: string,
  metadata: { [name: string]: unknown },
): void {
  if (started?.kind === "task") {
    const { id: taskId, contextId } = started.data;
    bus.publish({
      kind: "statusUpdate",
      data: {
        taskId,
        contextId,
        status: {
          state: TaskState.TASK_STATE_FAILED,
          message: agentMessage(text, metadata, contextId, taskId),
          timestamp: new Date().toISOString(),
        },
        metadata: {},
      },
    });
    return;
  }
  const taskId = requestContext.task?.id ?? "";
  bus.publish({ kind: "message", data: agentMessage(text, metadata, requestContext.contextId, taskId) });
}

function agentMessage(
  text: string,
  metadata: { [name: string]: unknown },
  contextId: string,
  taskId: string,
): Message {
  return {
    messageId: globalThis.crypto.randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [
      { content: { $case: "text", value: text }, mediaType: "text/plain", filename: "", metadata: undefined },
    ],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

/**
 * A recorded answer, published as an execution ends: the message, or the task followed by a status update with its
 * status, since the SDK ends a blocking send or a stream on a status update (a task waiting for input) and answers a
 * blocking send at once on one (a task waiting for authorization); a task event alone would leave those waiting. A
 * task waiting for authorization also ends the bus, which the SDK keeps open for the executor to go on: a replay has
 * nothing more to say, and a stream would otherwise stay open.
 */
export function publishReplay(bus: ExecutionEventBus, answer: A2aAnswer): void {
  bus.publish(answer);
  if (answer.kind !== "task") return;
  const { id: taskId, contextId, status } = answer.data;
  bus.publish({ kind: "statusUpdate", data: { taskId, contextId, status, metadata: {} } });
  if (status?.state === TaskState.TASK_STATE_AUTH_REQUIRED) bus.finished();
}

/**
 * What a key is bound to: what the sender wrote (parts, references, extensions, metadata but the key) and the task
 * it continues, never the ids the server fills in for a new task (a retry gets fresh ones).
 */
export function messageContent(requestContext: RequestContext): unknown {
  const message = requestContext.userMessage;
  const { [IDEMPOTENCY_KEY_METADATA]: _key, ...metadata } = message.metadata ?? {};
  return {
    role: message.role,
    parts: JSON.parse(toJsonText(message.parts)),
    referenceTaskIds: message.referenceTaskIds ?? [],
    extensions: message.extensions ?? [],
    metadata,
    task: requestContext.task?.id ?? null,
  };
}

/**
 * The bus the executor publishes on: every event goes on to the real bus as it comes, and is kept in `events` (a new
 * list, or one an execution already records into, for what its `cancelTask` publishes).
 */
export function recordingBus(
  bus: ExecutionEventBus,
  events: A2aEvent[] = [],
): { bus: ExecutionEventBus; events: A2aEvent[] } {
  const recording: ExecutionEventBus = {
    publish(event: AgentExecutionEvent) {
      events.push(event);
      bus.publish(event);
    },
    on(name: "event" | "finished", listener: never) {
      bus.on(name as "event", listener);
      return recording;
    },
    off(name: "event" | "finished", listener: never) {
      bus.off(name as "event", listener);
      return recording;
    },
    once(name: "event" | "finished", listener: never) {
      bus.once(name as "event", listener);
      return recording;
    },
    removeAllListeners(name) {
      bus.removeAllListeners(name);
      return recording;
    },
    finished() {
      bus.finished();
    },
  } as ExecutionEventBus;
  return { bus: recording, events };
}
