import { hash } from "node:crypto";
import { CanonicalizationError } from "../errors/canonicalization-error.js";
import { canonicalizeAt, resolveMaxDepth } from "./canonicalize.js";
import { quotePlain } from "./quote.js";

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
  return sha256Hex(canonicalCall(taskId, tool, args, options));
}

/** The exact string that `idempotencyKey` hashes. */
export function canonicalCall(
  taskId: string,
  tool: string,
  args: unknown,
  options?: IdempotencyKeyOptions,
): string {
  const maxDepth = resolveMaxDepth(options?.maxDepth);
  return canonicalCallOf(
    taskId,
    tool,
    () => canonicalizeAt(args, "$.args", maxDepth),
    options?.step,
    maxDepth,
  );
}

/**
 * `canonicalCall` for a caller that needs the canonical arguments for itself too (the harness records them), so
 * that they are computed once. `argsText` runs after taskId and tool are checked, as in `canonicalCall`.
 */
export function canonicalCallOf(
  taskId: string,
  tool: string,
  argsText: () => string,
  step: string | number | undefined,
  maxDepth: number,
): string {
  let out = `[${name("taskId", taskId)},${name("tool", tool)},${argsText()}`;
  if (step !== undefined) {
    if (typeof step !== "string" && typeof step !== "number") {
      throw new TypeError(`options.step must be a string or a number, got ${typeof step}`);
    }
    out += `,${canonicalizeAt(step, "$.step", maxDepth)}`;
  }
  return out + "]";
}

function name(field: string, value: unknown): string {
  if (typeof value !== "string" || value.length === 0) {
    const got = typeof value === "string" ? "an empty string" : value === null ? "null" : typeof value;
    throw new TypeError(`${field} must be a non-empty string, got ${got}`);
  }
  if (!value.isWellFormed()) {
    throw new CanonicalizationError(
      `$.${field}`,
      "string contains a lone surrogate, which UTF-8 cannot encode",
    );
  }
  return quotePlain(value) ?? JSON.stringify(value);
}

export function sha256Hex(text: string): string {
  return hash("sha256", text, "hex");
}
