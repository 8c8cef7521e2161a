import type { Message, SendMessageConfiguration, StreamResponse, Task } from "@a2a-js/sdk";
import { IdempotencyConflictError } from "../../errors/idempotency-conflict-error.js";
import { OutcomeUnknownError } from "../../errors/outcome-unknown-error.js";
import { ToolCallError } from "../../errors/tool-call-error.js";
import { defineTool } from "../../harness/define-tool.js";
import type { Tool, ToolContext, ToolDefinition } from "../../harness/types.js";
import { type A2aAnswer, type A2aEvent, foldEvents } from "../fold.js";
import { NO_EFFECT_METADATA, REFUSAL_METADATA, Refusal, TaskState } from "../meta.js";
import { type A2aMessageInput, keyedMessage } from "./message.js";
import { A2aTaskError } from "./task-error.js";

/**
 * The task states that answer an error: final states the agent reported in place of an answer. A canceled task
 * may have acted before it was stopped (a table booked, then the task canceled): it is an error nobody vouched for,
 * never a success to build on.
 */
const ERROR_STATES: readonly number[] = [
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
];

const STATE_NAMES: { [state: number]: string } = {
  [TaskState.TASK_STATE_FAILED]: "failed",
  [TaskState.TASK_STATE_CANCELED]: "canceled",
  [TaskState.TASK_STATE_REJECTED]: "rejected",
};

/** What one send answers: the agent's message, or its task. */
export type A2aResult = Message | Task;

/** A send's parameters, as `a2aTool` passes them to the client. */
export interface A2aSendParams {
  message: Message;
  configuration?: Partial<SendMessageConfiguration>;
}

/**
 * The methods of the SDK's `Client` (`@a2a-js/sdk/client`, made by `ClientFactory`) that `a2aTool` uses: a client
 * of any transport fits.
 */
export interface A2aSendClient {
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's request type has required proto fields; a partial fits at run time.
  sendMessage(params: any, options?: { signal?: AbortSignal }): Promise<A2aResult>;
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  sendMessageStream(params: any, options?: { signal?: AbortSignal }): AsyncIterable<StreamResponse>;
}

export interface A2aToolOptions<A> extends Omit<ToolDefinition<A, A2aResult>, "run"> {
  /**
   * Makes the message from the call's arguments. The key is never part of it: `a2aTool` adds the message id and
   * metadata. @default the arguments are an `A2aMessageInput` (`{ text }`, `{ parts }`, ...)
   */
  message?: (args: A) => A2aMessageInput;
  /**
   * Sends with `message/stream` (the SDK's `sendMessageStream`) and folds the events into the final task or
   * message, instead of one blocking `message/send`.
   * @default false
   */
  stream?: boolean;
  /** Sent with every message (accepted output modes, history length). @default none */
  configuration?: Partial<SendMessageConfiguration>;
}

/**
 * Turns sending a message to an A2A agent into a tool for `harness.call`. Each call sends a message whose id and
 * `metadata["dev.idemkey/idempotency-key"]` come from the call's key: a retry after a lost answer is the same
 * message, which an agent wrapped in `idempotentExecutor` answers from its record instead of acting twice. Use
 * `effect: "keyed"` for such an agent.
 *
 * The agent's refusals become errors: `key_reused` an `IdempotencyConflictError`, `outcome_unknown` an
 * `OutcomeUnknownError`, a message still running or a store out of reach a retryable `ToolCallError` (nothing
 * ran), a message the agent marked `"dev.idemkey/no-effect"` a `ToolCallError` with `noEffect: true`. Any other
 * failed, canceled or rejected task throws `A2aTaskError`, which says nothing about the effect unless the tool's
 * `noEffect` classifier vouches for it: an `unguarded` call's outcome is then unknown, a `keyed` one is released and
 * its repeat reaches the agent with the same key (which answers it from its record: the same canceled task). Every
 * other answer is returned, a task in whatever state it is in (working, waiting for input or authorization).
 *
 * @example
 * const book = a2aTool(client, { name: "booking-agent", effect: "keyed" });
 * const task = await harness.call("trip-4411", book, { text: "Book a table for two at 8pm" });
 */
export function a2aTool<A = A2aMessageInput>(
  client: A2aSendClient,
  options: A2aToolOptions<A>,
): Tool<A, A2aResult> {
  if (typeof client !== "object" || client === null || typeof client.sendMessage !== "function") {
    throw new TypeError("client must be an A2A Client (it has no sendMessage method)");
  }
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  const { message = (args: A) => args as A2aMessageInput, stream = false, configuration, ...rest } = options;
  if (typeof message !== "function") throw new TypeError("options.message must be a function");
  if (typeof stream !== "boolean") throw new TypeError("options.stream must be a boolean");
  if (stream && typeof client.sendMessageStream !== "function") {
    throw new TypeError("options.stream needs a client with a sendMessageStream method");
  }
  return defineTool<A, A2aResult>({
    ...rest,
    run: async (args, ctx) => {
      const params: A2aSendParams = { message: keyedMessage(ctx.idempotencyKey, message(args)) };
      if (configuration !== undefined) params.configuration = configuration;
      const answer = stream ? await streamed(client, params, ctx) : await sent(client, params, ctx);
      return checked(answer, rest.name, ctx);
    },
  });
}

async function sent(client: A2aSendClient, params: A2aSendParams, ctx: ToolContext): Promise<A2aAnswer> {
  const result = await client.sendMessage(params, { signal: ctx.signal });
  return "messageId" in result ? { kind: "message", data: result } : { kind: "task", data: result };
}

async function streamed(client: A2aSendClient, params: A2aSendParams, ctx: ToolContext): Promise<A2aAnswer> {
  const events: A2aEvent[] = [];
  for await (const response of client.sendMessageStream(params, { signal: ctx.signal })) {
    const payload = response.payload;
    if (payload !== undefined) events.push({ kind: payload.$case, data: payload.value } as A2aEvent);
  }
  const answer = foldEvents(events);
  if (answer === undefined) throw new ToolCallError("The A2A stream ended without a task or a message");
  return answer;
}

/** The answer, or the error a refusal or a no-effect mark in it stands for. */
function checked(answer: A2aAnswer, tool: string, ctx: ToolContext): A2aResult {
  const marked = answer.kind === "message" ? answer.data : answer.data.status?.message;
  const metadata = marked?.metadata ?? {};
  const text = (marked?.parts ?? [])
    .map((part) => (part.content?.$case === "text" ? part.content.value : ""))
    .join("\n")
    .trim();
  const key = ctx.idempotencyKey;
  switch (metadata[REFUSAL_METADATA]) {
    case Refusal.keyReused:
      throw new IdempotencyConflictError({ key, by: "a2a", tool, detail: text });
    case Refusal.outcomeUnknown:
      throw new OutcomeUnknownError({ key, by: "a2a", tool, detail: text });
    case Refusal.keyInFlight:
    case Refusal.unavailable:
      throw new ToolCallError(`The A2A agent behind "${tool}" did not act on the message yet: ${text}`, {
        noEffect: true,
        retryAfterMs: 1000,
      });
    case Refusal.keyInvalid:
    case Refusal.keyMissing:
      throw new ToolCallError(`The A2A agent behind "${tool}" refused the message: ${text}`, {
        noEffect: true,
        retryable: false,
      });
  }
  if (metadata[NO_EFFECT_METADATA] === true) {
    throw new ToolCallError(`The A2A agent behind "${tool}" failed without acting: ${text}`, {
      noEffect: true,
      retryable: false,
    });
  }
  if (answer.kind === "task" && ERROR_STATES.includes(answer.data.status?.state ?? 0)) {
    throw new A2aTaskError(
      tool,
      answer.data,
      text || `the task ended ${STATE_NAMES[answer.data.status?.state ?? 0]}`,
    );
  }
  return answer.data;
}
