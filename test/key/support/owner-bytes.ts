// The owner engine's byte paths, bundled alone by test/key/neutral-bundle.test.ts to run where Buffer and
// node:crypto do not exist: the request fingerprint (hashed in parts) and a saved response's base64 body.
export { requestFingerprint } from "../../../src/owner/fingerprint.js";
export { decodeSaved, encodeSaved } from "../../../src/owner/saved-response.js";
