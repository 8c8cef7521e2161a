export { ApprovalDeniedError } from "./approval-denied-error.js";
export { CanonicalizationError } from "./canonicalization-error.js";
export { IdemkeyError } from "./idemkey-error.js";
export { IdempotencyConflictError } from "./idempotency-conflict-error.js";
export { LedgerStateError } from "./ledger-state-error.js";
export { OutcomeUnknownError } from "./outcome-unknown-error.js";
export { SchemaVersionError } from "./schema-version-error.js";
export { ToolCallError, type ToolCallErrorOptions } from "./tool-call-error.js";
export { WaitTimeoutError } from "./wait-timeout-error.js";
