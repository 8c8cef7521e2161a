/*
 * The metadata names idemkey puts on A2A messages: the same `dev.idemkey/` names MCP's `_meta` carries, so that one
 * reader of the wire knows both. A2A metadata is a free key/value map on the message (and on a task's status
 * message); A2A reserves no prefix there.
 */
export {
  IDEMPOTENCY_KEY_META as IDEMPOTENCY_KEY_METADATA,
  NO_EFFECT_META as NO_EFFECT_METADATA,
  REFUSAL_META as REFUSAL_METADATA,
  Refusal,
} from "../mcp/meta.js";

/** The SDK's `Role` values idemkey sends (the protocol's enum numbers; the SDK is not loaded at run time). */
export const Role = { ROLE_USER: 1, ROLE_AGENT: 2 } as const;

/** The SDK's `TaskState` values idemkey publishes or tells apart. */
export const TaskState = {
  TASK_STATE_FAILED: 4,
  TASK_STATE_CANCELED: 5,
  TASK_STATE_INPUT_REQUIRED: 6,
  TASK_STATE_REJECTED: 7,
  TASK_STATE_AUTH_REQUIRED: 8,
} as const;
