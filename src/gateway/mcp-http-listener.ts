import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { numberOption } from "../options/number-option.js";
import { isToken } from "../options/token.js";
import { type McpGateway, mcpGateway } from "./mcp-gateway.js";
import { type GatewayTransport, type McpGatewayOptions, resolveGatewayOptions } from "./mcp-options.js";
import { certificateScope, checkTls, listen, refusedUncertified, type TlsOptions } from "./tls.js";

/** A running MCP gateway that answers clients over Streamable HTTP. */
export interface McpHttpGateway {
  /** Where clients connect, such as `http://127.0.0.1:8080/mcp` (`https://` with `tls`). */
  readonly url: string;
  /** Closes every client session (their keyed calls in progress finish first) and their upstream connections. */
  close(): Promise<void>;
}

export interface McpHttpGatewayOptions
  extends Omit<McpGatewayOptions, "client" | "upstream" | "scope">,
    TlsOptions {
  /**
   * Opens one connection to the upstream MCP server, called once per client session: each client initializes
   * its own upstream session, as it would talking to the server itself.
   * @example upstream: () => new StreamableHTTPClientTransport(new URL("http://127.0.0.1:3001/mcp"))
   */
  upstream: () => GatewayTransport;
  /**
   * The request header that names the caller (an API key, a tenant id), read when a session starts: its keys are
   * that caller's, and the session's later requests must carry the same value. Without it every client shares
   * `scope`.
   * @example scopeHeader: "x-api-key"
   */
  scopeHeader?: string;
  /** The scope of every session when there is no `scopeHeader` nor `scopeMtls`. @default "" */
  scope?: string;
  /** @default "127.0.0.1" */
  host?: string;
  /** @default 0 (a free port) */
  port?: number;
  /** The path clients post to. @default "/mcp" */
  path?: string;
  /**
   * How long a session may go without a request, in milliseconds, before the gateway closes it (its keyed calls in
   * progress finish and are recorded first) with its upstream connection: a client killed without ending its
   * session would otherwise keep an upstream connection (for a stdio upstream, a process) until the gateway stops.
   * A client that comes back later starts a new session, and gets the recorded answers for its keys.
   * @default 1800000 (30 minutes)
   */
  sessionIdleMs?: number;
}

interface Session {
  gateway: McpGateway;
  /** Closes the session once it has been idle for `sessionIdleMs`; pushed back by each request. */
  idle: ReturnType<typeof setTimeout> | undefined;
  transport: GatewayTransport & {
    handleRequest(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void>;
  };
  scope: string;
}

/** A transport for checking options with, never started. */
const UNUSED: GatewayTransport = {
  start: async () => {},
  send: async () => {},
  close: async () => {},
};

/** The largest JSON-RPC message read from a client, so that a huge body costs no memory. */
const BODY_LIMIT = 4 * 1024 * 1024;

/**
 * `mcpGateway` answering its clients over Streamable HTTP (with `@modelcontextprotocol/sdk`'s
 * `StreamableHTTPServerTransport`, one per client session) instead of stdio: every session is a gateway of its own
 * in front of its own upstream connection, all deduping in one `store`, so that a client that reconnects (a new
 * session) gets the answers recorded for its keys.
 *
 * @example
 * const gateway = await mcpHttpGateway({
 *   upstream: () => new StdioClientTransport({ command: "npx", args: ["@modelcontextprotocol/server-memory"] }),
 *   store: sqliteStore("./gateway.db"),
 *   port: 8080,
 * });
 */
export async function mcpHttpGateway(options: McpHttpGatewayOptions): Promise<McpHttpGateway> {
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const {
    upstream,
    scopeHeader,
    scopeMtls,
    tls,
    scope = "",
    host = "127.0.0.1",
    port = 0,
    path = "/mcp",
    sessionIdleMs: idleOption,
    ...rest
  } = options;
  const sessionIdleMs = numberOption("options.sessionIdleMs", idleOption, 1_800_000, { exclusive: true });
  if (typeof upstream !== "function") {
    throw new TypeError("options.upstream must be a function that opens a connection to the upstream server");
  }
  if (scopeHeader !== undefined && !isToken(scopeHeader)) {
    throw new TypeError(`options.scopeHeader must be a header name, got ${String(scopeHeader)}`);
  }
  checkTls(tls, scopeMtls, scopeHeader);
  if (typeof path !== "string" || !path.startsWith("/")) {
    throw new TypeError(`options.path must start with "/", got ${String(path)}`);
  }
  // The gateway's own options are checked now, not when the first client comes.
  resolveGatewayOptions({ ...rest, scope, upstream: UNUSED, client: UNUSED });
  const header = scopeHeader?.toLowerCase();
  const scopeOf = (req: IncomingMessage) =>
    scopeMtls !== undefined
      ? certificateScope(req, scopeMtls)
      : header === undefined
        ? scope
        : String(req.headers[header] ?? "");
  let sdk: typeof import("@modelcontextprotocol/sdk/server/streamableHttp.js");
  try {
    sdk = await import("@modelcontextprotocol/sdk/server/streamableHttp.js");
  } catch {
    throw new TypeError(
      "mcpHttpGateway needs @modelcontextprotocol/sdk (npm install @modelcontextprotocol/sdk)",
    );
  }
  const sessions = new Map<string, Session>();
  /** Sessions started and not yet closed, initialized or not: `close` waits for them all. */
  const open = new Set<McpGateway>();

  async function startSession(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const sessionScope = scopeOf(req);
    let session: Session | undefined;
    const transport = new sdk.StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        if (session !== undefined) sessions.set(id, session);
      },
    });
    // Options checked here first, so that a bad one throws before anything starts.
    const gateway = mcpGateway({ ...rest, scope: sessionScope, upstream: upstream(), client: transport });
    session = { gateway, transport, scope: sessionScope, idle: undefined };
    open.add(gateway);
    touch(session);
    void gateway.closed.then(() => {
      clearTimeout(session.idle);
      open.delete(gateway);
      for (const [id, s] of sessions) if (s === session) sessions.delete(id);
    });
    try {
      await gateway.start();
    } catch (error) {
      await gateway.close();
      return sendError(res, 502, `The upstream MCP server could not be started: ${(error as Error).message}`);
    }
    await transport.handleRequest(req, res, body);
  }

  function touch(session: Session): void {
    clearTimeout(session.idle);
    session.idle = setTimeout(() => void session.gateway.close(), sessionIdleMs);
    session.idle.unref?.();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (refusedUncertified(req, res, tls)) return;
    const url = new URL(req.url ?? "/", "http://gateway");
    if (url.pathname !== path) return sendError(res, 404, `No MCP endpoint at ${url.pathname}; use ${path}`);
    let body: unknown;
    if (req.method === "POST") {
      const text = await readBody(req);
      if (text === undefined) return sendError(res, 413, `A message is at most ${BODY_LIMIT} bytes`);
      try {
        body = JSON.parse(text);
      } catch {
        return sendError(res, 400, "Parse error: Invalid JSON", -32700);
      }
    }
    const id = req.headers["mcp-session-id"];
    if (typeof id === "string") {
      const session = sessions.get(id);
      if (session === undefined) return sendError(res, 404, "Session not found", -32001);
      // A session is its caller's: another caller's header or certificate (or none) may not use it.
      if (scopeOf(req) !== session.scope)
        return sendError(res, 403, "This session belongs to another caller");
      return session.transport.handleRequest(req, res, body);
    }
    const initialize =
      req.method === "POST" &&
      (Array.isArray(body) ? body : [body]).some(
        (m) => typeof m === "object" && m !== null && (m as { method?: unknown }).method === "initialize",
      );
    if (!initialize) return sendError(res, 400, "Bad Request: No valid session ID provided");
    return startSession(req, res, body);
  }

  const server = await listen(
    (req, res) => {
      handle(req, res).catch((error: unknown) => {
        if (!res.headersSent)
          sendError(res, 500, `Gateway error: ${(error as Error)?.message ?? String(error)}`);
        else res.destroy();
      });
    },
    { tls, host, port },
  );
  return {
    url: server.origin + path,
    async close() {
      await Promise.allSettled([...open].map((gateway) => gateway.close()));
      await server.close();
    },
  };
}

/** A JSON-RPC error with no id, as the SDK's transport answers what it cannot take. */
function sendError(res: ServerResponse, status: number, message: string, code = -32000): void {
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    req.on("data", (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total <= BODY_LIMIT) chunks.push(chunk);
    });
    req.on("end", () => resolve(total > BODY_LIMIT ? undefined : Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
