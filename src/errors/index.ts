export { CanonicalizationError } from "./canonicalization-error.js";
export { IdemkeyError } from "./idemkey-error.js";
