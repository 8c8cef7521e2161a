import type { McpErrorEvent } from "../mcp/server/dedupe-options.js";
import { describeThrown } from "../options/describe.js";
import { numberOption } from "../options/number-option.js";
import { reporter } from "../options/report.js";
import { checkStore } from "../options/store-option.js";
import type { Store } from "../store/types.js";

/** A JSON-RPC 2.0 message as the gateway relays it: it reads `id`, `method`, `params`, `result`, `error`. */
export interface JsonRpcMessage {
  jsonrpc: "2.0";
  id?: string | number;
  method?: string;
  params?: { [name: string]: unknown };
  result?: { [name: string]: unknown };
  error?: { code: number; message: string; data?: unknown };
}

/**
 * One side of the gateway: the shape of an `@modelcontextprotocol/sdk` `Transport` (`StdioClientTransport`,
 * `StdioServerTransport`, `StreamableHTTPClientTransport`, ...), so that any of them fits on either side.
 */
export interface GatewayTransport {
  start(): Promise<void>;
  // A batch, as the SDK's HTTP client transport takes one; the gateway sends one message at a time.
  send(message: JsonRpcMessage | JsonRpcMessage[]): Promise<void>;
  close(): Promise<void>;
  // Method signatures, so that a transport typed with the SDK's own message union fits.
  onmessage?(message: JsonRpcMessage): void;
  onclose?(): void;
  onerror?(error: Error): void;
}

export interface McpGatewayOptions {
  /** The MCP server the gateway fronts, as a client transport to it (`new StdioClientTransport({ command })`). */
  upstream: GatewayTransport;
  /** Where the gateway answers its client, as a server transport (`new StdioServerTransport()`). */
  client: GatewayTransport;
  /** Where keys and saved results live (records under `mcp:`, as `mcpDedupe` writes them). */
  store: Store;
  /**
   * Whose keys these are: one client can never replay or block another's call. A stdio gateway has one client,
   * the process that started it, so the default is one global scope.
   * @default ""
   */
  scope?: string;
  /**
   * Derives a key for a call that carries none, as the harness would (`idempotencyKey(deriveKeys, tool, args)`),
   * with this string in the place of the task id. Off by default: such a key cannot tell two calls the model meant
   * as two (the same message sent twice on purpose) from a retry, and a retry whose arguments were reworded gets a
   * new key. See docs/gateway.md.
   * @example deriveKeys: "nightly-import"
   */
  deriveKeys?: string;
  /**
   * How long a call whose key is still running waits for that call's answer, in milliseconds, before it is refused
   * as in flight (with a retry hint).
   * @default 10000
   */
  waitMs?: number;
  /**
   * How long the gateway waits for the upstream's answer to a keyed call, in milliseconds; past it the outcome is
   * recorded as unknown (the call may still act) and never sent again.
   * @default 300000
   */
  callTimeoutMs?: number;
  /** @default 30000 (see `mcpDedupe`'s `leaseMs`) */
  leaseMs?: number;
  /** @default 86400000 (see `mcpDedupe`'s `retentionMs`) */
  retentionMs?: number;
  /**
   * Told about store failures once a call's answer is decided, as `mcpDedupe`'s `onError` is.
   * @default a process warning of type `IdemkeyWarning`
   */
  onError?: (event: McpErrorEvent) => void;
}

export interface ResolvedGateway {
  upstream: GatewayTransport;
  client: GatewayTransport;
  store: Store;
  scope: string;
  deriveKeys: string | undefined;
  waitMs: number;
  callTimeoutMs: number;
  leaseMs: number;
  retentionMs: number;
  onError: (event: McpErrorEvent) => void;
}

export function resolveGatewayOptions(options: McpGatewayOptions): ResolvedGateway {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  for (const side of ["upstream", "client"] as const) {
    const transport = options[side] as Partial<GatewayTransport> | undefined;
    for (const method of ["start", "send", "close"] as const) {
      if (typeof transport?.[method] !== "function") {
        throw new TypeError(`options.${side} must be an MCP transport; it has no ${method}() method`);
      }
    }
  }
  checkStore(options.store, ["claim", "update", "delete", "get"]);
  const scope = options.scope ?? "";
  if (typeof scope !== "string") throw new TypeError("options.scope must be a string");
  const deriveKeys = options.deriveKeys;
  if (deriveKeys !== undefined && (typeof deriveKeys !== "string" || deriveKeys === "")) {
    throw new TypeError("options.deriveKeys must be a non-empty string (the scope keys are derived under)");
  }
  if (options.onError !== undefined && typeof options.onError !== "function") {
    throw new TypeError("options.onError must be a function");
  }
  return {
    upstream: options.upstream,
    client: options.client,
    store: options.store,
    scope,
    deriveKeys,
    waitMs: numberOption("options.waitMs", options.waitMs, 10_000),
    callTimeoutMs: numberOption("options.callTimeoutMs", options.callTimeoutMs, 300_000, { exclusive: true }),
    leaseMs: numberOption("options.leaseMs", options.leaseMs, 30_000, { exclusive: true }),
    retentionMs: numberOption("options.retentionMs", options.retentionMs, 86_400_000, { exclusive: true }),
    onError: reporter(options.onError, "onError", errorText),
  };
}

function errorText({ error, phase, tool, scope, key }: McpErrorEvent): string {
  return `gateway: ${phase} failed for a "${tool}" call with key ${JSON.stringify(key)} (scope ${JSON.stringify(scope)}): ${describeThrown(error)}`;
}
