export { type CanonicalizeOptions, canonicalize, DEFAULT_MAX_DEPTH } from "./canonicalize.js";
export { hashImplementation } from "./hash.js";
export {
  canonicalCall,
  type IdempotencyKeyOptions,
  idempotencyKey,
  keyHash,
  sha256Hex,
} from "./idempotency-key.js";
