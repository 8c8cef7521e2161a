export { HttpStatusError } from "../errors/http-status-error.js";
export { IdempotencyConflictError } from "../errors/idempotency-conflict-error.js";
export { NetworkError } from "../errors/network-error.js";
export type { LookupAnswer } from "../owner/lookup.js";
export {
  createIdempotentFetch,
  type IdempotentFetch,
  type IdempotentFetchOptions,
  type IdempotentRequestInit,
  idempotentFetch,
  type KeyContext,
} from "./idempotent-fetch.js";
export { type LookupReconcileOptions, lookupReconcile } from "./lookup-reconcile.js";
