export {
  type Decision,
  type EngineRequest,
  type IdempotencyEngine,
  idempotencyEngine,
  type PurgeOptions,
} from "./engine.js";
export type { RequestBody } from "./fingerprint.js";
export type { HandlerResponse, Lock } from "./lock.js";
export type { IdempotencyErrorEvent, IdempotencyOptions, SaveOutcome } from "./options.js";
export { type OwnerResponse, ProblemType } from "./problem.js";
