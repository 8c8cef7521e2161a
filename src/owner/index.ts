// `idemkey/owner`: the engine behind the middleware, for authors of an adapter to another framework. The root entry
// is the harness side only; the errors and store types both sides meet are on both.
export * from "../errors/index.js";
export type { EffectOnceLookup } from "../store/effect-once-lookup.js";
export * from "../store/index.js";
export {
  type Decision,
  type EngineRequest,
  type IdempotencyEngine,
  idempotencyEngine,
  type PurgeOptions,
} from "./engine.js";
export type { RequestBody } from "./fingerprint.js";
export type { HandlerResponse, Lock } from "./lock.js";
export type { LookupAnswer } from "./lookup.js";
export { isMarkedNoEffect, markNoEffect } from "./no-effect.js";
export type { IdempotencyErrorEvent, IdempotencyOptions, SaveOutcome } from "./options.js";
export { type OwnerResponse, ProblemType } from "./problem.js";
