import { describe } from "../options/describe.js";
import { checkNumber } from "../options/number-option.js";
import { Effect, type Tool, type ToolDefinition } from "./types.js";

const EFFECTS: readonly string[] = Object.values(Effect);
const defined = new WeakSet<object>();

/**
 * Declares a tool for `harness.call`: its name (part of every key), how its side effect behaves when repeated, and
 * optionally the natural identity of a call, an approval requirement and a reconcile check. Validated here, once,
 * with a `TypeError` naming the field at fault.
 *
 * @example
 * const openPullRequest = defineTool({
 *   name: "openPullRequest",
 *   effect: "keyed",
 *   identity: (args: { repo: string; head: string; title: string }) => ({ repo: args.repo, head: args.head }),
 *   run: async (args, ctx) => github.pulls.create({ ...args, headers: { "Idempotency-Key": ctx.idempotencyKey } }),
 * });
 */
export function defineTool<A, R>(definition: ToolDefinition<A, R>): Tool<A, R> {
  if (typeof definition !== "object" || definition === null) {
    throw new TypeError(
      `defineTool() needs a definition object, got ${definition === null ? "null" : typeof definition}`,
    );
  }
  const {
    name,
    effect,
    identity,
    noEffect,
    requiresApproval = false,
    reconcile,
    run,
    timeoutMs,
  } = definition;
  if (typeof name !== "string" || name.length === 0) {
    throw new TypeError(`tool.name must be a non-empty string, got ${describe(name)}`);
  }
  if (!EFFECTS.includes(effect as string)) {
    throw new TypeError(
      `tool.effect of "${name}" must be one of ${EFFECTS.join(", ")}, got ${describe(effect)}`,
    );
  }
  if (typeof run !== "function") throw new TypeError(`tool.run of "${name}" must be a function`);
  if (identity !== undefined && typeof identity !== "function") {
    throw new TypeError(`tool.identity of "${name}" must be a function`);
  }
  if (noEffect !== undefined && typeof noEffect !== "function") {
    throw new TypeError(`tool.noEffect of "${name}" must be a function (error) => boolean | undefined`);
  }
  if (typeof requiresApproval !== "boolean") {
    throw new TypeError(`tool.requiresApproval of "${name}" must be a boolean`);
  }
  if (requiresApproval && effect === Effect.read) {
    throw new TypeError(
      `tool.requiresApproval is not supported for the read tool "${name}": it has no ledger record`,
    );
  }
  if (reconcile !== undefined) {
    if (typeof reconcile !== "function")
      throw new TypeError(`tool.reconcile of "${name}" must be a function`);
    if (effect !== Effect.unguarded) {
      throw new TypeError(
        `tool.reconcile is only for unguarded tools; "${name}" is ${effect}, which the harness re-runs with its key`,
      );
    }
  }
  if (timeoutMs !== undefined) checkNumber(`tool.timeoutMs of "${name}"`, timeoutMs, { exclusive: true });
  const tool: Tool<A, R> = Object.freeze({
    name,
    effect,
    identity,
    noEffect,
    requiresApproval,
    timeoutMs,
    reconcile,
    run,
  });
  defined.add(tool);
  return tool;
}

export function isTool(value: unknown): value is Tool<unknown, unknown> {
  return typeof value === "object" && value !== null && defined.has(value);
}
