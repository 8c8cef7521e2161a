import type { RequestContext } from "@a2a-js/sdk/server";
import type { McpErrorEvent } from "../../mcp/server/dedupe-options.js";
import { describeThrown } from "../../options/describe.js";
import { numberOption } from "../../options/number-option.js";
import { reporter } from "../../options/report.js";
import { checkStore } from "../../options/store-option.js";
import type { Store } from "../../store/types.js";

/** A failure once an execution's answer was decided; `tool` is always `"a2a message"`. */
export type A2aErrorEvent = McpErrorEvent;

export interface IdempotentExecutorOptions {
  /**
   * Where keys and recorded answers live: any idemkey store, under the `a2a:` prefix, so the harness ledger, the
   * HTTP middleware and MCP dedupe can share it. Use one every instance of the agent reaches.
   */
  store: Store;
  /**
   * Names the caller, so that keys are per caller: one can never replay or block another's message. The default is
   * the tenant and the authenticated user the SDK's `UserBuilder` made (`context.tenant`, `context.user.userName`),
   * one global scope where there are none.
   * @default (ctx) => JSON.stringify([ctx.context.tenant ?? "", ctx.context.user?.isAuthenticated ? ctx.context.user.userName : ""])
   */
  scope?: (requestContext: RequestContext) => string | Promise<string>;
  /**
   * Whether a message without a key is refused (`key_missing`). By default it runs unprotected, as every A2A
   * client that is not idemkey's sends none.
   * @default false
   */
  required?: boolean;
  /**
   * How long a running execution holds its key, in milliseconds, renewed every third of it while it runs. It only
   * matters when the server dies mid-execution: a retry then waits for at most this long before it finds the key
   * abandoned and answers `outcome_unknown` (see `rerunAfterTakeover`).
   * @default 30000
   */
  leaseMs?: number;
  /**
   * How long a recorded answer is replayed, in milliseconds, from when it was recorded. Remove expired records with
   * the store's `purge`.
   * @default 86400000 (24 hours)
   */
  retentionMs?: number;
  /**
   * How long a duplicate that finds its key still running waits for that execution's answer, in milliseconds,
   * looking at the store every `pollMs`: it then gets the same answer. Past it, it is refused as `key_in_flight`.
   * @default 60000
   */
  waitMs?: number;
  /**
   * The pause between two looks at the store while a duplicate waits, in milliseconds.
   * @default 50
   */
  pollMs?: number;
  /**
   * What a retry does when it finds the key of an execution whose server died (its lease ran out): the executor may
   * have acted, so by default the retry is refused (`outcome_unknown`) and the key recorded as such; `true` runs the
   * executor again, for agents whose effects are themselves idempotent.
   * @default false
   */
  rerunAfterTakeover?: boolean;
  /**
   * Told about failures once an answer is decided: a store error while claiming, saving or releasing a key, a lease
   * lost. A hook that throws, or no hook, gives an `IdemkeyWarning` instead.
   * @default a process warning of type `IdemkeyWarning`
   */
  onError?: (event: A2aErrorEvent) => void;
}

export interface ResolvedExecutorOptions {
  store: Store;
  scope: (requestContext: RequestContext) => string | Promise<string>;
  required: boolean;
  leaseMs: number;
  retentionMs: number;
  waitMs: number;
  pollMs: number;
  rerunAfterTakeover: boolean;
  onError: (event: A2aErrorEvent) => void;
}

export function resolveExecutorOptions(options: IdempotentExecutorOptions): ResolvedExecutorOptions {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  checkStore(options.store, ["claim", "update", "delete"]);
  if (options.scope !== undefined && typeof options.scope !== "function") {
    throw new TypeError("options.scope must be a function");
  }
  for (const name of ["required", "rerunAfterTakeover"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "boolean") {
      throw new TypeError(`options.${name} must be a boolean`);
    }
  }
  if (options.onError !== undefined && typeof options.onError !== "function") {
    throw new TypeError("options.onError must be a function");
  }
  return {
    store: options.store,
    scope: options.scope ?? defaultScope,
    required: options.required ?? false,
    leaseMs: numberOption("options.leaseMs", options.leaseMs, 30_000, { exclusive: true }),
    retentionMs: numberOption("options.retentionMs", options.retentionMs, 24 * 60 * 60 * 1000, {
      exclusive: true,
    }),
    waitMs: numberOption("options.waitMs", options.waitMs, 60_000),
    pollMs: numberOption("options.pollMs", options.pollMs, 50, { exclusive: true }),
    rerunAfterTakeover: options.rerunAfterTakeover ?? false,
    onError: reporter(options.onError, "onError", errorText),
  };
}

function defaultScope({ context }: RequestContext): string {
  const user = context.user?.isAuthenticated ? context.user.userName : "";
  return JSON.stringify([context.tenant ?? "", user]);
}

function errorText({ error, phase, scope, key }: A2aErrorEvent): string {
  return `${phase} failed for an A2A message with key ${JSON.stringify(key)} (scope ${scope}): ${describeThrown(error)}`;
}
