import { hmacSha256, sha256, toHex } from "./sha256.js";

/**
 * The hashes idemkey's core needs, synchronous and in lowercase hex: node:crypto's when the runtime has it (Node,
 * Bun, Deno, workerd with `nodejs_compat`), else the pure-JS SHA-256 of `sha256.ts` (workerd without it, a
 * browser). The same bytes give the same hex either way, so a key does not depend on where it was derived.
 *
 * node:crypto is found through `process.getBuiltinModule` rather than a static import, which would fail to load
 * (or to bundle for a neutral platform) where it does not exist. Node has it from 20.16 and 22.3; on Node 20.12 to
 * 20.15, which `engines` still accepts, the pure path runs: the same keys, slower (docs/runtimes.md has the cost).
 */
interface NodeCrypto {
  createHash(algorithm: "sha256"): Digest;
  createHmac(algorithm: "sha256", key: string | Uint8Array): Digest;
  /** The one-shot form (Node 20.12 and 21.7 on), faster than `createHash` for a short input. */
  hash?(algorithm: "sha256", data: string | Uint8Array, encoding: "hex"): string;
}
interface Digest {
  update(data: string | Uint8Array): Digest;
  digest(encoding: "hex"): string;
}

function findNodeCrypto(): NodeCrypto | undefined {
  const process = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  try {
    const crypto = process?.getBuiltinModule?.("node:crypto") as NodeCrypto | undefined;
    return typeof crypto?.createHash === "function" ? crypto : undefined;
  } catch {
    // A runtime that names the function but refuses the module: the pure path.
    return undefined;
  }
}

const nodeCrypto = findNodeCrypto();

/** Which implementation this runtime hashes with: `node:crypto`, or `pure-js` (`sha256.ts`). */
export const hashImplementation: "node:crypto" | "pure-js" = nodeCrypto ? "node:crypto" : "pure-js";

/** SHA-256 of `data` (a string as its UTF-8 bytes) in lowercase hex, with the pure-JS implementation. */
export function pureSha256Hex(data: string | Uint8Array): string {
  return toHex(sha256(data));
}

/** HMAC-SHA-256 of `data` under `secret` in lowercase hex, with the pure-JS implementation. */
export function pureHmacSha256Hex(secret: string | Uint8Array, data: string | Uint8Array): string {
  return toHex(hmacSha256(secret, data));
}

/** SHA-256 of `data` (a string as its UTF-8 bytes) in lowercase hex. */
export const sha256Hex: (data: string | Uint8Array) => string = nodeSha256Hex(nodeCrypto) ?? pureSha256Hex;

function nodeSha256Hex(crypto: NodeCrypto | undefined): ((data: string | Uint8Array) => string) | undefined {
  if (crypto === undefined) return undefined;
  const { hash } = crypto;
  if (typeof hash === "function") return (data) => hash("sha256", data, "hex");
  return (data) => crypto.createHash("sha256").update(data).digest("hex");
}

/** HMAC-SHA-256 of `data` under `secret` in lowercase hex. */
export const hmacSha256Hex: (secret: string | Uint8Array, data: string | Uint8Array) => string = nodeCrypto
  ? (secret, data) => nodeCrypto.createHmac("sha256", secret).update(data).digest("hex")
  : pureHmacSha256Hex;

/** SHA-256 of the parts one after the other, as if joined, in lowercase hex. */
export function sha256PartsHex(parts: readonly (string | Uint8Array)[]): string {
  if (nodeCrypto) {
    const digest = nodeCrypto.createHash("sha256");
    for (const part of parts) digest.update(part);
    return digest.digest("hex");
  }
  const encoded = parts.map((part) => (typeof part === "string" ? encoder.encode(part) : part));
  const joined = new Uint8Array(encoded.reduce((sum, part) => sum + part.byteLength, 0));
  let at = 0;
  for (const part of encoded) {
    joined.set(part, at);
    at += part.byteLength;
  }
  return pureSha256Hex(joined);
}

const encoder = new TextEncoder();
