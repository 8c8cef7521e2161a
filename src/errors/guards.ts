import type { ApprovalDeniedError } from "./approval-denied-error.js";
import { branded } from "./brand.js";
import type { CanonicalizationError } from "./canonicalization-error.js";
import type { ErrorAnswer } from "./error-answer.js";
import type { HttpStatusError } from "./http-status-error.js";
import type { IdemkeyError } from "./idemkey-error.js";
import type { IdempotencyConflictError } from "./idempotency-conflict-error.js";
import type { LeaseLostError } from "./lease-lost-error.js";
import type { LedgerStateError } from "./ledger-state-error.js";
import type { MissingPeerError } from "./missing-peer-error.js";
import type { NetworkError } from "./network-error.js";
import type { OutcomeUnknownError } from "./outcome-unknown-error.js";
import type { ResponseTooLargeError } from "./response-too-large-error.js";
import type { SchemaVersionError } from "./schema-version-error.js";
import type { StoreConfigError } from "./store-config-error.js";
import type { StoreError } from "./store-error.js";
import type { StoreLayoutError } from "./store-layout-error.js";
import type { ToolCallError } from "./tool-call-error.js";
import type { WaitTimeoutError } from "./wait-timeout-error.js";

// Guards read the family's Symbol.for mark (see brand.ts), not `instanceof`: an error made by another copy of
// idemkey, or in another realm, passes, and so does an instance of a subclass. (ky's `isKyError` is the model.)

/** Whether `error` is one of idemkey's errors, from this copy of the package or any other, in any realm. */
export function isIdemkeyError(error: unknown): error is IdemkeyError {
  return branded(error, "IdemkeyError");
}

export function isApprovalDeniedError(error: unknown): error is ApprovalDeniedError {
  return branded(error, "ApprovalDeniedError");
}

export function isCanonicalizationError(error: unknown): error is CanonicalizationError {
  return branded(error, "CanonicalizationError");
}

export function isErrorAnswer(error: unknown): error is ErrorAnswer {
  return branded(error, "ErrorAnswer");
}

export function isHttpStatusError(error: unknown): error is HttpStatusError {
  return branded(error, "HttpStatusError");
}

export function isIdempotencyConflictError(error: unknown): error is IdempotencyConflictError {
  return branded(error, "IdempotencyConflictError");
}

export function isLeaseLostError(error: unknown): error is LeaseLostError {
  return branded(error, "LeaseLostError");
}

export function isLedgerStateError(error: unknown): error is LedgerStateError {
  return branded(error, "LedgerStateError");
}

export function isMissingPeerError(error: unknown): error is MissingPeerError {
  return branded(error, "MissingPeerError");
}

export function isNetworkError(error: unknown): error is NetworkError {
  return branded(error, "NetworkError");
}

export function isOutcomeUnknownError(error: unknown): error is OutcomeUnknownError {
  return branded(error, "OutcomeUnknownError");
}

export function isResponseTooLargeError(error: unknown): error is ResponseTooLargeError {
  return branded(error, "ResponseTooLargeError");
}

export function isSchemaVersionError(error: unknown): error is SchemaVersionError {
  return branded(error, "SchemaVersionError");
}

export function isStoreConfigError(error: unknown): error is StoreConfigError {
  return branded(error, "StoreConfigError");
}

export function isStoreError(error: unknown): error is StoreError {
  return branded(error, "StoreError");
}

export function isStoreLayoutError(error: unknown): error is StoreLayoutError {
  return branded(error, "StoreLayoutError");
}

export function isToolCallError(error: unknown): error is ToolCallError {
  return branded(error, "ToolCallError");
}

export function isWaitTimeoutError(error: unknown): error is WaitTimeoutError {
  return branded(error, "WaitTimeoutError");
}
