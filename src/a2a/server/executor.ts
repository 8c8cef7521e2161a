import type { AgentExecutor, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import { type CallOutcome, dedupeCall } from "../../mcp/server/dedupe-call.js";
import { StorePrefix, scopedKey } from "../../store/scoped-key.js";
import { type A2aAnswer, answerText, foldEvents, parseAnswer } from "../fold.js";
import { NO_EFFECT_METADATA, REFUSAL_METADATA, Refusal } from "../meta.js";
import { messageContent, publishMarked, publishReplay, recordingBus } from "./answers.js";
import { type IdempotentExecutorOptions, resolveExecutorOptions } from "./options.js";
import { messageKey } from "./read-key.js";
import { taskWatch } from "./task-watch.js";

/** The tool name A2A records are fingerprinted and reported under. */
const TOOL = "a2a message";

/**
 * Wraps an `AgentExecutor` so that a message carrying an idempotency key in its metadata
 * (`"dev.idemkey/idempotency-key"`, sent by `a2aTool` and `keyedMessage`) is executed once, whatever the retries:
 *
 * - the first message with a key runs the executor; what it published (the task as its last event left it, or its
 *   message) is recorded in the store, what its `cancelTask` publishes for the task included: a task canceled while
 *   it runs, or while it waits for input or authorization, is recorded canceled;
 * - a retry with the same content gets the recorded answer, published on its event bus, without running it;
 * - a duplicate while the first still runs waits for it (`waitMs`) and then gets the same answer;
 * - the same key with other content gets a `key_reused` refusal; the executor does not run.
 *
 * A refusal is an agent message (or, once a task was started, that task failed with the message) whose metadata
 * holds `"dev.idemkey/refusal"`, one of `Refusal`; `a2aTool` turns it into the matching error. An executor that
 * throws may have acted before it threw: its key is recorded as `outcome_unknown` and every retry is refused so,
 * never run again. Only an error with `noEffect: true` releases the key, answered with `"dev.idemkey/no-effect":
 * true`. A server that dies mid-execution leaves the key to lapse with its lease; the retry that finds it then is
 * refused as `outcome_unknown` (unless `rerunAfterTakeover`).
 *
 * @example
 * const executor = idempotentExecutor(new BookingExecutor(), { store: sqliteStore("./a2a.db") });
 * const handler = new DefaultRequestHandler(agentCard, new InMemoryTaskStore(), executor);
 */
export function idempotentExecutor(
  executor: AgentExecutor,
  options: IdempotentExecutorOptions,
): AgentExecutor {
  if (typeof executor !== "object" || executor === null || typeof executor.execute !== "function") {
    throw new TypeError("executor must be an AgentExecutor (it has no execute method)");
  }
  const resolved = resolveExecutorOptions(options);
  const { store, required, leaseMs, retentionMs, waitMs, pollMs, rerunAfterTakeover, onError } = resolved;
  const tasks = taskWatch(store);

  async function execute(requestContext: RequestContext, eventBus: ExecutionEventBus): Promise<void> {
    const key = messageKey(requestContext.userMessage);
    if (typeof key === "object") {
      return publishMarked(eventBus, requestContext, undefined, key.problem, {
        [REFUSAL_METADATA]: Refusal.keyInvalid,
      });
    }
    if (key === undefined) {
      if (!required) return executor.execute(requestContext, eventBus);
      const text = "This agent needs an idempotency key in the message's metadata.";
      return publishMarked(eventBus, requestContext, undefined, text, {
        [REFUSAL_METADATA]: Refusal.keyMissing,
      });
    }
    const scope = await resolved.scope(requestContext);
    if (typeof scope !== "string") {
      throw new TypeError(
        `options.scope must return a string, got ${scope === null ? "null" : typeof scope}`,
      );
    }
    const recording = recordingBus(eventBus);
    const recordKey = scopedKey(StorePrefix.a2a, scope, key);
    let execution: ReturnType<typeof tasks.start> | undefined;
    let outcome: CallOutcome<A2aAnswer | undefined> | undefined;
    try {
      outcome = await dedupeCall({
        store,
        leaseMs,
        retentionMs,
        rerunAfterTakeover,
        scope,
        key,
        recordKey,
        tool: TOOL,
        args: messageContent(requestContext),
        run: async () => {
          const running = tasks.start(requestContext.taskId, recording.events);
          execution = running;
          try {
            await executor.execute(requestContext, recording.bus);
          } finally {
            running.ran();
          }
          return foldEvents(recording.events);
        },
        // Nothing published, nothing to replay: the key is released.
        serialize: (answer) => (answer === undefined ? undefined : answerText(answer)),
        waitMs,
        pollMs,
        onError,
      });
    } finally {
      // Once the answer is saved (or not), a cancel still to come is applied to the record.
      const ran = outcome?.kind === "ran" ? outcome : undefined;
      execution?.recorded(ran && recordKey, ran?.result, (error) =>
        onError({ error, phase: "save", tool: TOOL, scope, key }),
      );
    }
    switch (outcome.kind) {
      case "ran":
        return;
      case "replayed":
        return publishReplay(eventBus, parseAnswer(outcome.saved));
      case "no_effect": {
        const { error } = outcome;
        const text = error instanceof Error ? error.message : String(error);
        const started = foldEvents(recording.events);
        return publishMarked(eventBus, requestContext, started, text, { [NO_EFFECT_METADATA]: true });
      }
      case "refused": {
        const started = foldEvents(recording.events);
        return publishMarked(eventBus, requestContext, started, outcome.text, {
          [REFUSAL_METADATA]: outcome.refusal,
        });
      }
    }
  }

  return {
    execute,
    cancelTask: (taskId, eventBus) =>
      tasks.cancel(taskId, eventBus, (bus) => executor.cancelTask(taskId, bus)),
  };
}
