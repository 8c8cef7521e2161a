export { CanonicalizationError } from "./canonicalization-error.js";
export { IdemkeyError } from "./idemkey-error.js";
export { IdempotencyConflictError } from "./idempotency-conflict-error.js";
export { SchemaVersionError } from "./schema-version-error.js";
