import { randomUUID } from "node:crypto";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { canonicalize } from "../key/canonicalize.js";
import { sha256Hex } from "../key/idempotency-key.js";
import type { Store } from "../store/types.js";
import { InvalidIdempotencyKeyError } from "./invalid-key-error.js";
import { REFUSAL_META, REPLAYED_META, Refusal } from "./meta.js";
import { idempotencyKeyOf } from "./read-key.js";

/** What `mcpDedupe` reads of a tool handler's `extra`: the request `_meta` and the authenticated caller. */
export interface McpHandlerExtra {
  _meta?: { [name: string]: unknown } | undefined;
  authInfo?: { clientId: string } | undefined;
}

export interface McpDedupeOptions<Extra extends McpHandlerExtra = McpHandlerExtra> {
  /**
   * Where keys and saved tool results live: any idemkey store. Records go under the `mcp:` prefix, so the harness
   * ledger and the HTTP middleware can share the store. Use one that every instance of the server reaches.
   */
  store: Store;
  /**
   * Names the caller, so that keys are per caller: one caller can never replay or block another's call. The default
   * is the authenticated client of the request (`extra.authInfo.clientId`, set by the SDK's bearer-auth middleware
   * on HTTP transports), and one global scope where there is none, which is right for a stdio server: it has one
   * client, the process that started it. Return a user or tenant id when one OAuth client acts for many users.
   * Never scope by `extra.sessionId`: a client that reconnects after a failure gets a new session, and its retry
   * would then not be recognised.
   * @default (extra) => extra.authInfo?.clientId ?? ""
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
   * retry runs the tool again.
   * @default 30000
   */
  leaseMs?: number;
  /**
   * How long a saved result is replayed, in milliseconds, from when it was saved. After it, the same key runs the
   * tool again. Remove expired records with `store.purge()`.
   * @default 86400000 (24 hours)
   */
  retentionMs?: number;
  /**
   * Decides whether a result is saved (and replayed to retries) or the key is released so that a retry runs the tool
   * again. Return `undefined` for the default: save unless it is an error result.
   * @default (result) => result.isError !== true
   */
  save?: (result: CallToolResult) => boolean | undefined;
}

type Handler<A, E> = (args: A, extra: E) => CallToolResult | Promise<CallToolResult>;

/** Wraps one tool handler: `name` is the tool's name, so that a key reused for another tool is refused. */
export type McpDedupe<Extra extends McpHandlerExtra> = <A, E extends Extra>(
  name: string,
  handler: Handler<A, E>,
) => (args: A, extra: E) => Promise<CallToolResult>;

/**
 * Dedupes tool calls at the MCP server on the idempotency key in their `_meta` (`"dev.idemkey/idempotency-key"`,
 * sent by `mcpTool`), with the same rules as the HTTP middleware: the first call with a key runs the tool and its
 * result is saved; a repeat with the same tool and arguments gets the saved result (with `"dev.idemkey/replayed":
 * true` in its `_meta`); the same key with another tool or other arguments is refused (`key_reused`, which the
 * client turns into `IdempotencyConflictError`); a repeat while the first still runs is refused as in flight, to be
 * retried. Refusals are error results carrying `"dev.idemkey/refusal"` in their `_meta`; the tool does not run.
 *
 * For tools registered with an `inputSchema` (whose handler takes `(args, extra)`).
 *
 * @example
 * const idempotent = mcpDedupe({ store: sqliteStore("./mcp.db") });
 * server.registerTool("create_issue", { inputSchema }, idempotent("create_issue", async (args) => createIssue(args)));
 */
export function mcpDedupe<Extra extends McpHandlerExtra = McpHandlerExtra>(
  options: McpDedupeOptions<Extra>,
): McpDedupe<Extra> {
  const { store, scope, required, leaseMs, retentionMs, save } = resolveOptions(options);

  return function dedupe<A, E extends Extra>(name: string, handler: Handler<A, E>) {
    if (typeof name !== "string" || name.length === 0) {
      throw new TypeError(`name must be the tool's name, a non-empty string, got ${typeof name}`);
    }
    if (typeof handler !== "function") throw new TypeError(`the handler of "${name}" must be a function`);

    return async function idempotent(args: A, extra: E): Promise<CallToolResult> {
      let key: string | undefined;
      try {
        key = idempotencyKeyOf(extra);
      } catch (error) {
        if (error instanceof InvalidIdempotencyKeyError) return refuse(Refusal.keyInvalid, error.message);
        throw error;
      }
      if (key === undefined) {
        if (!required) return handler(args, extra);
        return refuse(Refusal.keyMissing, `The tool "${name}" needs an idempotency key in _meta.`);
      }
      const who = await scope(extra);
      if (typeof who !== "string") {
        throw new TypeError(`options.scope must return a string, got ${who === null ? "null" : typeof who}`);
      }
      const fingerprint = sha256Hex(canonicalize([name, args ?? null]));
      const recordKey = storeKey(who, key);
      const token = randomUUID();
      let claim: Awaited<ReturnType<Store["claim"]>>;
      try {
        claim = await store.claim(recordKey, {
          fingerprint,
          token,
          leaseMs,
          ttlMs: retentionMs,
          data: JSON.stringify({ scope: who, key, tool: name }),
        });
      } catch (error) {
        warn(`could not claim the key of a "${name}" call`, error);
        return refuse(
          Refusal.unavailable,
          "The server could not check this call's idempotency key, so it did not run the tool. Retry it later.",
        );
      }
      if (claim.status === "exists") {
        const { record } = claim;
        if (record.fingerprint !== fingerprint) {
          return refuse(
            Refusal.keyReused,
            "This idempotency key was already used for another tool or other arguments. Retry the original " +
              "call unchanged, or send this one with a new key.",
          );
        }
        if (record.state !== "completed" || record.result === null) {
          return refuse(
            Refusal.keyInFlight,
            "A call with this idempotency key is still running. Retry it later to get its result.",
          );
        }
        const saved = JSON.parse(record.result) as CallToolResult;
        return { ...saved, _meta: { ...saved._meta, [REPLAYED_META]: true } };
      }

      const renewal = setInterval(() => {
        store.update(recordKey, { token, state: "pending" }, { leaseMs }).catch(() => {
          // A store hiccup: the next renewal may still come before the lease runs out.
        });
      }, leaseMs / 3);
      // A renewal timer must not keep a process alive that is otherwise done.
      renewal.unref();
      let result: CallToolResult;
      try {
        result = await handler(args, extra);
      } catch (error) {
        clearInterval(renewal);
        await release(recordKey, token);
        throw error;
      }
      clearInterval(renewal);
      let text: string | undefined;
      try {
        text = (save(result) ?? result.isError !== true) ? JSON.stringify(result) : undefined;
      } catch (error) {
        warn(`the result of a "${name}" call could not be saved`, error);
      }
      if (text === undefined) {
        await release(recordKey, token);
        return result;
      }
      try {
        await store.update(
          recordKey,
          { token, state: "pending" },
          { state: "completed", token: null, leaseMs: null, result: text, ttlMs: retentionMs },
        );
      } catch (error) {
        // The tool ran: its result goes to the client; the key stays claimed until its lease runs out.
        warn(`the result of a "${name}" call could not be saved`, error);
      }
      return result;
    };
  };

  async function release(recordKey: string, token: string): Promise<void> {
    try {
      await store.delete(recordKey, { token, state: "pending" });
    } catch (error) {
      // The key stays claimed until its lease runs out; then a retry takes it over.
      warn("could not release a key", error);
    }
  }
}

/** The record's identity is (scope, key): JSON keeps the pair unambiguous, and the hash bounds its length. */
export function storeKey(scope: string, key: string): string {
  return `mcp:${sha256Hex(JSON.stringify([scope, key]))}`;
}

function refuse(refusal: Refusal, text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true, _meta: { [REFUSAL_META]: refusal } };
}

function warn(what: string, error: unknown): void {
  process.emitWarning(`idemkey/mcp: ${what}: ${String(error)}`, "IdemkeyWarning");
}

interface Resolved<Extra> {
  store: Store;
  scope: (extra: Extra) => string | Promise<string>;
  required: boolean;
  leaseMs: number;
  retentionMs: number;
  save: (result: CallToolResult) => boolean | undefined;
}

function resolveOptions<Extra extends McpHandlerExtra>(options: McpDedupeOptions<Extra>): Resolved<Extra> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  const store = options.store as Partial<Store> | undefined;
  for (const method of ["claim", "update", "delete"] as const) {
    if (typeof store?.[method] !== "function") {
      throw new TypeError(`options.store must implement the Store contract; it has no ${method}() method`);
    }
  }
  const resolved: Resolved<Extra> = {
    store: options.store,
    scope: options.scope ?? ((extra) => extra.authInfo?.clientId ?? ""),
    required: options.required ?? false,
    leaseMs: positive("leaseMs", options.leaseMs, 30_000),
    retentionMs: positive("retentionMs", options.retentionMs, 24 * 60 * 60 * 1000),
    save: options.save ?? (() => undefined),
  };
  if (typeof resolved.scope !== "function") throw new TypeError("options.scope must be a function");
  if (typeof resolved.required !== "boolean") throw new TypeError("options.required must be a boolean");
  if (typeof resolved.save !== "function") throw new TypeError("options.save must be a function");
  return resolved;
}

function positive(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || !(value > 0)) {
    throw new TypeError(`options.${name} must be a finite number > 0, got ${String(value)}`);
  }
  return value;
}
