import { describeThrown } from "../../options/describe.js";
import { numberOption } from "../../options/number-option.js";
import { reporter } from "../../options/report.js";
import { checkStore } from "../../options/store-option.js";
import type { Store } from "../../store/types.js";
import type { McpCallToolResult as CallToolResult } from "../types.js";

/**
 * What `mcpDedupe` reads of a tool handler's `extra`: the request `_meta` and the authenticated caller, where v1
 * (`@modelcontextprotocol/sdk`) puts them (`extra._meta`, `extra.authInfo`) or where v2 (`@modelcontextprotocol/server`)
 * does (`ctx.mcpReq._meta`, `ctx.http.authInfo`).
 */
export interface McpHandlerExtra {
  _meta?: { [name: string]: unknown } | undefined;
  authInfo?: { clientId: string } | undefined;
  mcpReq?: { _meta?: { [name: string]: unknown } | undefined };
  http?: { authInfo?: { clientId: string } | undefined } | undefined;
}

export interface McpDedupeOptions<Extra extends McpHandlerExtra = McpHandlerExtra> {
  /**
   * Where keys and saved tool results live: any idemkey store. Records go under the `mcp:` prefix, so the harness
   * ledger and the HTTP middleware can share the store. Use one that every instance of the server reaches.
   */
  store: Store;
  /**
   * Names the caller, so that keys are per caller: one caller can never replay or block another's call. The default
   * is the authenticated client of the request (`extra.authInfo.clientId` in v1, `ctx.http.authInfo.clientId` in v2,
   * set by the SDK's bearer-auth middleware on HTTP transports), and one global scope where there is none, which is right for a stdio server: it has one
   * client, the process that started it. Return a user or tenant id when one OAuth client acts for many users.
   * Never scope by `extra.sessionId`: a client that reconnects after a failure gets a new session, and its retry
   * would then not be recognised.
   * @default (extra) => (extra.authInfo ?? extra.http?.authInfo)?.clientId ?? ""
   * @example scope: (extra) => String(extra.authInfo?.extra?.userId)
   */
  scope?: (extra: Extra) => string | Promise<string>;
  /**
   * Whether a call without a key is refused (`key_missing`). By default it runs unprotected, because most MCP
   * clients send no key.
   * @default false
   */
  required?: boolean;
  /**
   * How long a running call holds its key, in milliseconds; renewed every third of it while the tool runs. Only
   * matters when the server dies mid-call: the key is then refused as in flight for at most this long, after which a
   * retry takes it over (see `rerunAfterTakeover`).
   * @default 30000
   */
  leaseMs?: number;
  /**
   * How long a saved result is replayed, in milliseconds, from when it was saved. After it, the same key runs the
   * tool again. Remove expired records with the harness's or the middleware's `purge({ batchSize })` on the same
   * store (every expired record, whoever wrote it), or the store's own `purge({ limit })`, one batch.
   * @default 86400000 (24 hours)
   */
  retentionMs?: number;
  /**
   * Decides whether a result the handler returned is saved (and replayed to retries) or the key is released so that
   * a retry runs the tool again. Return `undefined` for the default: save every result, error results included, as
   * Stripe saves every response, since an error result may follow an effect. Return `false` for an error result
   * your tool answers before doing anything, so that the same call can succeed later; better still, throw an error
   * with `noEffect: true`, which also tells the client. (Before issue #28 the default released error results.)
   * @default () => true
   * @example save: (result) => !(result.isError && result.structuredContent?.code === "invalid_input")
   */
  save?: (result: CallToolResult) => boolean | undefined;
  /**
   * What a retry does when it takes over a key whose lease ran out: the tool may have run, so by default it is
   * refused (`outcome_unknown`, which `mcpTool` turns into `OutcomeUnknownError`) and the key recorded as such;
   * `true` runs the tool again, for tools whose effects are themselves idempotent.
   * @default false
   */
  rerunAfterTakeover?: boolean;
  /**
   * Told about failures that happen once the call's answer is decided (the tool ran, or was refused): a store error
   * while claiming, saving or releasing a key, a lease lost while the tool ran, a `save` hook that threw. The same
   * event as the HTTP middleware's `onError`, with the tool's name; a hook that throws, or no hook, gives an
   * `IdemkeyWarning` instead.
   * @default a process warning of type `IdemkeyWarning`
   */
  onError?: (event: McpErrorEvent) => void;
}

/** A failure `mcpDedupe` could not answer with: the call's result was decided. */
export interface McpErrorEvent {
  readonly error: unknown;
  /**
   * Taking the key (or recording its unknown outcome), renewing its lease, saving the result, releasing the key,
   * or reading its record for a lookup (`"dev.idemkey/lookup": true`).
   */
  readonly phase: "claim" | "renew" | "save" | "release" | "lookup";
  readonly tool: string;
  readonly scope: string;
  readonly key: string;
}

interface Resolved<Extra> {
  store: Store;
  scope: (extra: Extra) => string | Promise<string>;
  required: boolean;
  leaseMs: number;
  retentionMs: number;
  save: (result: CallToolResult) => boolean | undefined;
  rerunAfterTakeover: boolean;
  onError: (event: McpErrorEvent) => void;
}

export function resolveOptions<Extra extends McpHandlerExtra>(
  options: McpDedupeOptions<Extra>,
): Resolved<Extra> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  checkStore(options.store, ["claim", "update", "delete"]);
  const resolved: Resolved<Extra> = {
    store: options.store,
    scope: options.scope ?? ((extra) => (extra.authInfo ?? extra.http?.authInfo)?.clientId ?? ""),
    required: options.required ?? false,
    leaseMs: positive("leaseMs", options.leaseMs, 30_000),
    retentionMs: positive("retentionMs", options.retentionMs, 24 * 60 * 60 * 1000),
    save: options.save ?? (() => undefined),
    rerunAfterTakeover: options.rerunAfterTakeover ?? false,
    onError: reporter(options.onError, "onError", errorText),
  };
  if (typeof resolved.rerunAfterTakeover !== "boolean") {
    throw new TypeError("options.rerunAfterTakeover must be a boolean");
  }
  if (typeof resolved.scope !== "function") throw new TypeError("options.scope must be a function");
  if (typeof resolved.required !== "boolean") throw new TypeError("options.required must be a boolean");
  if (typeof resolved.save !== "function") throw new TypeError("options.save must be a function");
  if (options.onError !== undefined && typeof options.onError !== "function") {
    throw new TypeError("options.onError must be a function");
  }
  return resolved;
}

const positive = (name: string, value: unknown, fallback: number) =>
  numberOption(`options.${name}`, value, fallback, { exclusive: true });

function errorText({ error, phase, tool, scope, key }: McpErrorEvent): string {
  return `${phase} failed for a "${tool}" call with key ${JSON.stringify(key)} (scope ${JSON.stringify(scope)}): ${describeThrown(error)}`;
}
