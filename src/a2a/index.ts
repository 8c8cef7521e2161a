// One subpath, two sides: client/ sends keyed messages from the harness, server/ dedupes an agent's executions on
// the key; meta.ts (the metadata names) and fold.ts (events into an answer) are what both sides read.
export {
  type A2aResult,
  type A2aSendClient,
  type A2aSendParams,
  type A2aToolOptions,
  a2aTool,
} from "./client/client-tool.js";
export { type A2aMessageInput, keyedMessage, messageIdFor } from "./client/message.js";
export { A2aTaskError, isA2aTaskError } from "./client/task-error.js";
export { type A2aAnswer, type A2aEvent, foldEvents } from "./fold.js";
export { IDEMPOTENCY_KEY_METADATA, NO_EFFECT_METADATA, REFUSAL_METADATA, Refusal } from "./meta.js";
export { idempotentExecutor } from "./server/executor.js";
export type { A2aErrorEvent, IdempotentExecutorOptions } from "./server/options.js";
