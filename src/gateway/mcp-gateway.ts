import { idempotencyKey } from "../key/idempotency-key.js";
import {
  JSONRPC_ERROR_SAVED,
  NO_EFFECT_META,
  REFUSAL_META,
  REPLAYED_META,
  RETRY_AFTER_META,
  Refusal,
} from "../mcp/meta.js";
import { dedupeCall } from "../mcp/server/dedupe-call.js";
import { InvalidIdempotencyKeyError } from "../mcp/server/invalid-key-error.js";
import { isLookup, lookupResult } from "../mcp/server/lookup-call.js";
import { idempotencyKeyOf } from "../mcp/server/read-key.js";
import { describeThrown } from "../options/describe.js";
import { type JsonRpcMessage, type McpGatewayOptions, resolveGatewayOptions } from "./mcp-options.js";
import { UpstreamClosedError } from "./upstream-closed-error.js";

/** A running gateway: `start` connects both sides, `close` lets keyed calls in progress finish, then closes both. */
export interface McpGateway {
  start(): Promise<void>;
  close(): Promise<void>;
  /** Resolves once both sides are closed: the client went away, the upstream exited, or `close` was called. */
  readonly closed: Promise<void>;
}

/** The JSON-RPC error code of the answers the gateway makes itself when the upstream is gone ("internal error"). */
export const UPSTREAM_GONE_CODE = -32603;

type Reply = Pick<JsonRpcMessage, "result" | "error">;
type Id = string | number;

/**
 * A request the gateway sent upstream and that is not answered yet, by the id the gateway gave it: a keyed call
 * waiting for its answer, or a request of the client's passed through, answered under the client's own id.
 */
type Outstanding =
  | { keyed: true; resolve: (reply: Reply) => void; reject: (error: Error) => void }
  | { keyed: false; clientId: Id };

/**
 * An idempotency gateway in front of an MCP server you do not control: every message passes between `client` and
 * `upstream` untouched, but for the client's request ids (each request goes upstream under an id of the gateway's,
 * and its answer comes back under the client's, so that no id a client picks can take another request's answer)
 * and `tools/call` requests carrying `_meta["dev.idemkey/idempotency-key"]` (or, with
 * `deriveKeys`, any `tools/call`), which are deduped in `store` with `mcpDedupe`'s rules: a replay gets the
 * recorded answer with `"dev.idemkey/replayed": true`; a call whose key is still running waits up to `waitMs`,
 * then is refused as `key_in_flight` with a retry hint; the same key with another tool or arguments is refused
 * `key_reused`; an upstream that dies (or does not answer within `callTimeoutMs`) while a call runs leaves the key
 * `outcome_unknown`, and the call is never sent upstream again. Whatever the upstream answered, error results and
 * JSON-RPC errors included, is recorded, except an error result marked `"dev.idemkey/no-effect": true`, which
 * releases the key. A `tools/call` whose `_meta` also says `"dev.idemkey/lookup": true` is answered from the record
 * of its key and never forwarded upstream, as `mcpDedupe` answers it. The wire format is in docs/gateway.md.
 *
 * @example
 * const gateway = mcpGateway({
 *   upstream: new StdioClientTransport({ command: "npx", args: ["@modelcontextprotocol/server-memory"] }),
 *   client: new StdioServerTransport(),
 *   store: sqliteStore("./gateway.db"),
 * });
 * await gateway.start();
 * await gateway.closed;
 */
export function mcpGateway(options: McpGatewayOptions): McpGateway {
  const o = resolveGatewayOptions(options);
  const { upstream, client } = o;
  // Every request goes upstream under an id of the gateway's own (a count), never the client's: the client may pick
  // any string or number, so an id passed through could name another request, and that request's answer would be
  // taken (and recorded under a key) for this one. Answers go back under the client's id, exactly as it sent it.
  /** Requests sent upstream and not answered yet, by the gateway's id. */
  const outstanding = new Map<number, Outstanding>();
  /** The client's requests passed through and not answered yet: its id, as it sent it, to the gateway's. */
  const relayed = new Map<Id, number>();
  /** Keyed calls being decided, by the client's request id: a cancellation of one is not passed on. */
  const running = new Map<Id, Promise<void>>();
  let sent = 0;
  let upstreamOpen = false;
  let closing: Promise<void> | undefined;
  let markClosed!: () => void;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));

  const toClient = (message: JsonRpcMessage) =>
    client.send(message).catch(() => {
      // The client is gone: its retry, through a new gateway on the same store, gets the recorded answer.
    });

  /** The upstream is gone: keyed calls learn it (their outcome is unknown), passed-through requests are answered. */
  function failOutstanding(error: UpstreamClosedError) {
    for (const request of outstanding.values()) {
      if (request.keyed) request.reject(error);
      else void toClient(gone(request.clientId, "The upstream MCP server exited before it answered."));
    }
    outstanding.clear();
    relayed.clear();
  }

  /** Forgets a request passed through, answered or cancelled: a later answer under its id goes nowhere. */
  function forget(id: number) {
    const request = outstanding.get(id);
    outstanding.delete(id);
    if (request?.keyed === false && relayed.get(request.clientId) === id) relayed.delete(request.clientId);
  }

  async function callUpstream(message: JsonRpcMessage): Promise<Reply> {
    if (!upstreamOpen)
      throw new UpstreamClosedError("The upstream MCP server is not running; nothing was sent.", true);
    const id = ++sent;
    const answer = new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        outstanding.delete(id);
        reject(
          new UpstreamClosedError(`The upstream MCP server did not answer within ${o.callTimeoutMs} ms.`),
        );
      }, o.callTimeoutMs);
      timer.unref?.();
      outstanding.set(id, {
        keyed: true,
        resolve: (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
    });
    try {
      await upstream.send({ ...message, id });
    } catch (error) {
      outstanding.delete(id);
      if (sentNothing(error)) {
        throw new UpstreamClosedError(
          `The upstream MCP server did not take the call (${describeThrown(error)}); nothing was sent.`,
          true,
        );
      }
      // A write that failed may still have reached the server: nobody can say it did nothing.
      throw new UpstreamClosedError("The upstream MCP server's connection failed while the call was sent.");
    }
    return answer;
  }

  async function keyedCall(message: JsonRpcMessage, key: string, lookup: boolean): Promise<JsonRpcMessage> {
    const params = message.params ?? {};
    const tool = String(params.name);
    const outcome = await dedupeCall<Reply>({
      store: o.store,
      leaseMs: o.leaseMs,
      retentionMs: o.retentionMs,
      rerunAfterTakeover: false,
      scope: o.scope,
      key,
      tool,
      args: params.arguments,
      run: () => callUpstream(message),
      serialize: (reply) => {
        if (reply.error !== undefined) return JSON.stringify({ [JSONRPC_ERROR_SAVED]: reply.error });
        // The upstream's own word that the call did nothing (the contract's rule): the key is released.
        const meta = reply.result?._meta as { [name: string]: unknown } | undefined;
        if (reply.result?.isError === true && meta?.[NO_EFFECT_META] === true) return undefined;
        return JSON.stringify(reply.result ?? {});
      },
      waitMs: o.waitMs,
      pollMs: Math.min(250, Math.max(10, o.waitMs / 20)),
      onError: o.onError,
      lookup,
    });
    const id = message.id as string | number;
    switch (outcome.kind) {
      case "looked_up":
        return { jsonrpc: "2.0", id, result: lookupResult(outcome.found) };
      case "ran":
        return { jsonrpc: "2.0", id, ...outcome.result };
      case "no_effect":
        return {
          jsonrpc: "2.0",
          id,
          error: {
            code: UPSTREAM_GONE_CODE,
            message: (outcome.error as Error).message,
            data: { [NO_EFFECT_META]: true },
          },
        };
      case "refused": {
        const meta: { [name: string]: unknown } = { [REFUSAL_META]: outcome.refusal };
        if (outcome.refusal === Refusal.keyInFlight || outcome.refusal === Refusal.unavailable) {
          meta[RETRY_AFTER_META] = Math.max(1000, Math.round(o.waitMs));
        }
        const result = { content: [{ type: "text", text: outcome.text }], isError: true, _meta: meta };
        return { jsonrpc: "2.0", id, result };
      }
      case "replayed": {
        const saved = JSON.parse(outcome.saved) as { [name: string]: unknown };
        const error = saved[JSONRPC_ERROR_SAVED] as JsonRpcMessage["error"];
        if (error !== undefined) return { jsonrpc: "2.0", id, error };
        const meta = (saved._meta ?? {}) as { [name: string]: unknown };
        return { jsonrpc: "2.0", id, result: { ...saved, _meta: { ...meta, [REPLAYED_META]: true } } };
      }
    }
  }

  function refusal(id: Id, refusal: Refusal, text: string): JsonRpcMessage {
    return {
      jsonrpc: "2.0",
      id,
      result: { content: [{ type: "text", text }], isError: true, _meta: { [REFUSAL_META]: refusal } },
    };
  }

  function keyOf(message: JsonRpcMessage): string | undefined {
    const params = message.params ?? {};
    const key = idempotencyKeyOf({ _meta: params._meta as { [name: string]: unknown } | undefined });
    if (key !== undefined || o.deriveKeys === undefined) return key;
    return idempotencyKey(o.deriveKeys, String(params.name), params.arguments ?? {});
  }

  function fromClient(message: JsonRpcMessage) {
    if (message.method === "tools/call" && message.id !== undefined) {
      let key: string | undefined;
      let lookup: boolean;
      try {
        key = keyOf(message);
        lookup = isLookup(message.params?._meta as { [name: string]: unknown } | undefined);
      } catch (error) {
        if (!(error instanceof InvalidIdempotencyKeyError)) throw error;
        void toClient(refusal(message.id, Refusal.keyInvalid, error.message));
        return;
      }
      if (lookup && key === undefined) {
        // A lookup is answered here or refused, never forwarded: the upstream would run it as a call.
        const text = `A lookup of "${String(message.params?.name)}" needs the idempotency key in _meta.`;
        void toClient(refusal(message.id, Refusal.keyMissing, text));
        return;
      }
      if (key !== undefined) {
        const id = message.id;
        const done = keyedCall(message, key, lookup)
          .then(toClient, (error: unknown) =>
            toClient({ jsonrpc: "2.0", id, error: { code: UPSTREAM_GONE_CODE, message: String(error) } }),
          )
          .finally(() => running.delete(id));
        running.set(id, done);
        return;
      }
    }
    if (message.method === "notifications/cancelled") return cancel(message);
    if (message.method !== undefined && message.id !== undefined) return relay(message, message.id);
    // A notification, or the client's answer to a request of the upstream's (under the upstream's own id).
    void upstream.send(message).catch(() => {});
  }

  /** Passes a request of the client's upstream under an id of the gateway's. */
  function relay(message: JsonRpcMessage, clientId: Id) {
    const id = ++sent;
    outstanding.set(id, { keyed: false, clientId });
    relayed.set(clientId, id);
    void upstream.send({ ...message, id }).catch((error: unknown) => {
      if (!outstanding.has(id)) return;
      forget(id);
      void toClient(gone(clientId, `The upstream MCP server is not reachable: ${String(error)}`));
    });
  }

  /**
   * Passes on the client's cancellation of a request it passed through, naming it by the gateway's id. A keyed call
   * runs to its end and is recorded, so that the retry gets its answer (a cancelled request is never answered by the
   * upstream, and its outcome would stay unknown); an id the client has no request under names nothing upstream.
   */
  function cancel(message: JsonRpcMessage) {
    const params = message.params ?? {};
    const clientId = params.requestId as Id | undefined;
    if (clientId === undefined || running.has(clientId)) return;
    const id = relayed.get(clientId);
    if (id === undefined) return;
    forget(id);
    void upstream.send({ ...message, params: { ...params, requestId: id } }).catch(() => {});
  }

  function fromUpstream(message: JsonRpcMessage) {
    if (message.method === undefined && message.id !== undefined && message.id !== null) {
      // An answer: to a request of the gateway's, or to nothing still asked (a cancelled or timed-out one).
      const request = typeof message.id === "number" ? outstanding.get(message.id) : undefined;
      if (request === undefined) return;
      forget(message.id as number);
      if (!request.keyed) return void toClient({ ...message, id: request.clientId });
      request.resolve({
        ...(message.result ? { result: message.result } : {}),
        ...(message.error ? { error: message.error } : {}),
      });
      return;
    }
    // The upstream's notifications and requests to the client, under the upstream's own ids and tokens.
    void toClient(message);
  }

  async function close(): Promise<void> {
    closing ??= (async () => {
      // Keyed calls in progress finish and record their outcome before either side closes.
      await Promise.allSettled([...running.values()]);
      await Promise.allSettled([upstream.close(), client.close()]);
      markClosed();
    })();
    return closing;
  }

  return {
    closed,
    async start() {
      upstream.onmessage = fromUpstream;
      upstream.onclose = () => {
        upstreamOpen = false;
        failOutstanding(new UpstreamClosedError("The upstream MCP server exited while the call ran."));
        void close();
      };
      upstream.onerror = () => {};
      client.onmessage = fromClient;
      client.onclose = () => void close();
      client.onerror = () => {};
      await upstream.start();
      upstreamOpen = true;
      await client.start();
    },
    close,
  };
}

/** The gateway's own error answer to the client's request `id` when the upstream is gone. */
function gone(id: Id, message: string): JsonRpcMessage {
  return { jsonrpc: "2.0", id, error: { code: UPSTREAM_GONE_CODE, message } };
}

/**
 * Whether a failed send says the upstream never took the message: a refused connection (nothing was sent), or an
 * HTTP upstream's transport answering 4xx (a session it does not know, a request it cannot read), which it does
 * before any tool runs. Anything else (a reset, a 5xx, a stdio write that failed) may follow the effect.
 */
function sentNothing(error: unknown): boolean {
  const { code, cause } = (error ?? {}) as { code?: unknown; cause?: { code?: unknown } };
  if (cause?.code === "ECONNREFUSED" || code === "ECONNREFUSED") return true;
  // The SDK's StreamableHTTPError carries the HTTP status as `code` (and -1 for a body it could not read).
  const http = error instanceof Error && error.constructor.name === "StreamableHTTPError";
  return http && typeof code === "number" && code >= 400 && code < 500;
}
