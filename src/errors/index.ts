export { ApprovalDeniedError } from "./approval-denied-error.js";
export { CanonicalizationError } from "./canonicalization-error.js";
export { ErrorAnswer, type ErrorAnswerOptions } from "./error-answer.js";
export {
  isApprovalDeniedError,
  isCanonicalizationError,
  isErrorAnswer,
  isHttpStatusError,
  isIdemkeyError,
  isIdempotencyConflictError,
  isLeaseLostError,
  isLedgerStateError,
  isMissingPeerError,
  isNetworkError,
  isOutcomeUnknownError,
  isResponseTooLargeError,
  isSchemaVersionError,
  isStoreConfigError,
  isStoreError,
  isStoreLayoutError,
  isToolCallError,
  isWaitTimeoutError,
} from "./guards.js";
export { HttpStatusError, type HttpStatusErrorOptions } from "./http-status-error.js";
export { IdemkeyError } from "./idemkey-error.js";
export { IdempotencyConflictError, type IdempotencyConflictErrorData } from "./idempotency-conflict-error.js";
export { LeaseLostError } from "./lease-lost-error.js";
export { LedgerStateError, type LedgerStateErrorData } from "./ledger-state-error.js";
export { MissingPeerError } from "./missing-peer-error.js";
export { NetworkError, type NetworkErrorData } from "./network-error.js";
export {
  OutcomeUnknownError,
  type OutcomeUnknownErrorData,
  OutcomeUnknownReason,
} from "./outcome-unknown-error.js";
export { ResponseTooLargeError } from "./response-too-large-error.js";
export { type RetryHints, retryHints } from "./retry-hints.js";
export { SchemaVersionError } from "./schema-version-error.js";
export { StoreConfigError, type StoreConfigErrorData } from "./store-config-error.js";
export { StoreError, type StoreErrorData } from "./store-error.js";
export { StoreLayoutError, type StoreLayoutErrorData } from "./store-layout-error.js";
export { ToolCallError, type ToolCallErrorOptions } from "./tool-call-error.js";
export { WaitTimeoutError } from "./wait-timeout-error.js";
