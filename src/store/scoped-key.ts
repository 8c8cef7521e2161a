import { sha256Hex } from "../key/idempotency-key.js";

/**
 * The namespaces that keep the users of one shared store apart: the harness's ledger, the HTTP middleware and MCP
 * dedupe can share a store (and its purge), and none can read, replay or block another's records.
 */
export const StorePrefix = {
  /** The harness's ledger: `call:<idempotency key>`. */
  ledger: "call:",
  /** The HTTP middleware (`idempotency()`, `idempotencyEngine`): `http:<hash of scope and key>`. */
  http: "http:",
  /** MCP server dedupe (`mcpDedupe`): `mcp:<hash of scope and key>`. */
  mcp: "mcp:",
  /** A2A executor dedupe (`idempotentExecutor`): `a2a:<hash of scope and key>`. */
  a2a: "a2a:",
} as const;

export type StorePrefix = (typeof StorePrefix)[keyof typeof StorePrefix];

/**
 * The store key of a key a caller sent, under its caller's scope. The record's identity is (scope, key): JSON keeps
 * the pair unambiguous (`("a", "bc")` is not `("ab", "c")`) and the hash bounds its length whatever was sent.
 */
export function scopedKey(prefix: StorePrefix, scope: string, key: string): string {
  return `${prefix}${sha256Hex(JSON.stringify([scope, key]))}`;
}

/**
 * The store key of a ledger record. Not hashed again: the harness derives the key itself (already a hash, under
 * its task id) and inspectors list the ledger by it.
 */
export function ledgerKey(key: string): string {
  return StorePrefix.ledger + key;
}
