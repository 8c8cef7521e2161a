import { CanonicalizationError } from "../errors/canonicalization-error.js";
import { utf8Length } from "./bytes.js";
import { resolveMaxDepth, writeCanonical } from "./canonicalize.js";
import { sha256Hex as hashHex, hmacSha256Hex } from "./hash.js";
import { at, bytes, close, open, text, writeByte, writeQuoted } from "./writer.js";

export interface IdempotencyKeyOptions {
  /**
   * Tells apart legitimate identical writes within one task (two identical messages, say): the key becomes the
   * SHA-256 of the canonical form of `[taskId, tool, args, step]` instead of `[taskId, tool, args]`. Use a
   * position in the plan that stays the same when the task is replayed (a step number or name), never a random
   * value or a timestamp, which would defeat the key.
   */
  step?: string | number;
  /** As in `canonicalize`. @default 1000 */
  maxDepth?: number;
  /**
   * A secret shared by every process that derives keys for the same owners (the fleet): the key becomes
   * lowercase hex HMAC-SHA256(secret, canonical form) instead of SHA-256(canonical form). A plain key lets anyone
   * who sees it (in a header, a log, a key column) test guesses of a low-entropy argument, such as a 3-digit `cvc`,
   * one hash each; with a secret they cannot. Every process must use the same secret, or their keys differ and the
   * owner sees different requests. At least 16 bytes.
   */
  secret?: string | Uint8Array;
}

/**
 * The idempotency key of one tool call: lowercase hex SHA-256 of the UTF-8 bytes of
 * `canonicalize([taskId, tool, args])` (or `[taskId, tool, args, step]` with a step).
 *
 * Hashing an array keeps ("a", "bc") apart from ("ab", "c"); sorted members make `{a, b}` and `{b, a}` one key;
 * the task id scopes the key to one task. Throws `TypeError` when `taskId` or `tool` is not a non-empty string and
 * `CanonicalizationError` (with a path such as `$.args.items[3]`) when `args` is not strict JSON.
 *
 * @example idempotencyKey("task-8812", "openPullRequest", { repo: "acme/api", head: "fix-42" })
 */
export function idempotencyKey(
  taskId: string,
  tool: string,
  args: unknown,
  options?: IdempotencyKeyOptions,
): string {
  const maxDepth = resolveMaxDepth(options?.maxDepth);
  const step = options?.step;
  const start = open();
  try {
    writeCall(taskId, tool, args, step, maxDepth);
    // The bytes are hashed where they were written: a string would be encoded back into them.
    return keyHash(bytes(start), checkSecret(options?.secret));
  } finally {
    close(start);
  }
}

/**
 * SHA-256 of `text` (a string's UTF-8 bytes, or the bytes), or HMAC-SHA256 under `secret`, in lowercase hex: the
 * hash of keys and of recorded args.
 */
export function keyHash(text: string | Uint8Array, secret: string | Uint8Array | undefined): string {
  return secret === undefined ? hashHex(text) : hmacSha256Hex(secret, text);
}

/** What the harness derives of a call keyed on its arguments (no tool identity): see `callKeys`. */
export interface CallKeys {
  /** `idempotencyKey(taskId, tool, args, { step, secret })`. */
  key: string;
  /** `canonicalize(args)`: what the ledger records. */
  argsText: string;
  /** `keyHash(argsText, secret)`. */
  argsHash: string;
}

/**
 * The key, the canonical arguments and their hash from one write of the call: the arguments' bytes are hashed
 * where the call's were written, instead of being decoded into a string, then encoded back twice, once inside the
 * call's text and once alone (which took 1.8x `idempotencyKey`'s time for ~1 KB of arguments, `npm run bench --
 * key`). Checks and errors are `idempotencyKey`'s, in its order; `secret` must have passed `checkSecret`.
 */
export function callKeys(
  taskId: string,
  tool: string,
  args: unknown,
  step: string | number | undefined,
  maxDepth: number,
  secret: string | Uint8Array | undefined,
): CallKeys {
  const start = open();
  try {
    const [from, to] = writeCall(taskId, tool, args, step, maxDepth);
    return {
      key: keyHash(bytes(start), secret),
      argsText: text(from, to),
      argsHash: keyHash(bytes(from, to), secret),
    };
  } finally {
    close(start);
  }
}

/** A key secret is a string or bytes of at least 16 bytes; `name` is the option's name for the error. */
export function checkSecret(secret: unknown, name = "options.secret"): string | Uint8Array | undefined {
  if (secret === undefined) return undefined;
  const bytes =
    typeof secret === "string" ? utf8Length(secret) : secret instanceof Uint8Array ? secret.byteLength : -1;
  if (bytes < 16) {
    throw new TypeError(
      `${name} must be a string or Uint8Array of at least 16 bytes (a shared random secret)`,
    );
  }
  return secret as string | Uint8Array;
}

/** The exact string that `idempotencyKey` hashes. */
export function canonicalCall(
  taskId: string,
  tool: string,
  args: unknown,
  options?: IdempotencyKeyOptions,
): string {
  const maxDepth = resolveMaxDepth(options?.maxDepth);
  const step = options?.step;
  const start = open();
  try {
    writeCall(taskId, tool, args, step, maxDepth);
    return text(start);
  } finally {
    close(start);
  }
}

/**
 * `canonicalCall` written to the open write, with its checks in the same order. Returns where the arguments' bytes
 * start and end: marks, since a `toJSON` may write (and give back) a key of its own past them meanwhile.
 */
function writeCall(
  taskId: string,
  tool: string,
  args: unknown,
  step: string | number | undefined,
  maxDepth: number,
): [number, number] {
  writeByte(0x5b);
  writeName("taskId", taskId);
  writeByte(0x2c);
  writeName("tool", tool);
  writeByte(0x2c);
  const from = at();
  writeCanonical(args, "$.args", maxDepth);
  const to = at();
  if (step !== undefined) {
    checkStep(step);
    writeByte(0x2c);
    writeCanonical(step, "$.step", maxDepth);
  }
  writeByte(0x5d);
  return [from, to];
}

function checkStep(step: unknown): void {
  if (typeof step !== "string" && typeof step !== "number") {
    throw new TypeError(`options.step must be a string or a number, got ${typeof step}`);
  }
}

const LONE_IN_NAME = "string contains a lone surrogate, which UTF-8 cannot encode";

/** taskId and tool: a non-empty, well-formed string. */
function checkName(field: string, value: unknown): asserts value is string {
  if (typeof value !== "string" || value.length === 0) {
    const got = typeof value === "string" ? "an empty string" : value === null ? "null" : typeof value;
    throw new TypeError(`${field} must be a non-empty string, got ${got}`);
  }
  if (!value.isWellFormed()) throw new CanonicalizationError(`$.${field}`, LONE_IN_NAME);
}

function writeName(field: string, value: unknown): void {
  checkName(field, value);
  // Well-formed, so writeQuoted does not throw.
  writeQuoted(value, LONE_IN_NAME);
}

export function sha256Hex(text: string): string {
  return keyHash(text, undefined);
}
