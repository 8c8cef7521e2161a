export {
  type Decision,
  type EngineRequest,
  type IdempotencyEngine,
  idempotencyEngine,
  type PurgeOptions,
  storeKey,
} from "./engine.js";
export { type RequestBody, requestFingerprint } from "./fingerprint.js";
export { type KeyHeader, MAX_KEY_LENGTH, parseKeyHeader } from "./key-header.js";
export type { HandlerResponse, Lock } from "./lock.js";
export {
  ALWAYS_KEPT_HEADERS,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_METHODS,
  DEFAULT_RETENTION_MS,
  type IdempotencyErrorEvent,
  type IdempotencyOptions,
  type SaveOutcome,
} from "./options.js";
export { type OwnerResponse, ProblemType } from "./problem.js";
