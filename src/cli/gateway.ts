import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { storeDrivers } from "../drivers/list.js";
import type { GatewayTransport } from "../gateway/mcp-options.js";
import { isToken } from "../options/token.js";
import { StorePrefix } from "../store/scoped-key.js";
import { RunError, UsageError } from "./errors.js";
import { openChecked } from "./open-store.js";
import { serveUntilStopped } from "./serve.js";
import { untilStopped } from "./until-stopped.js";
import { whole } from "./whole.js";

export const GATEWAY_HELP = `  idemkey gateway mcp --store <url> [--scope <name>] [--derive-keys <scope>] [--wait-ms <n>]
                      [--call-timeout-ms <n>]
                      [--listen [<host>:]<port> [--scope-header <name>] [--session-idle-ms <n>]
                       [--tls-cert <file> --tls-key <file> [--tls-ca <file> [--scope-mtls subject|fingerprint]]]]
                      (-- <command> [args...] | --upstream-url <http://host:port/mcp>)
      Starts <command> as a stdio MCP server (or reaches one over Streamable HTTP at --upstream-url)
      and answers an MCP client on this process's stdio (or over Streamable HTTP at
      http://<host>:<port>/mcp with --listen, one upstream session per client session), passing
      every message through except tools/call with an idempotency key in _meta
      ("dev.idemkey/idempotency-key"), which is deduped in the store (docs/gateway.md).
      --derive-keys  keys calls that carry none from [<scope>, tool, arguments], as the harness would.
      --wait-ms      how long a duplicate of a running call waits for its answer (default 10000).
      --scope-header with --listen, the request header naming the caller; keys are per caller.
      --session-idle-ms  with --listen, closes a session (and its upstream connection) idle this long
                     (default 1800000).
      --tls-cert, --tls-key, --tls-ca, --scope-mtls  with --listen, as for gateway http below (https://
                     <host>:<port>/mcp; with --scope-mtls a session is its client certificate's).
  idemkey gateway http --store <url> --upstream <http://host:port> --listen [<host>:]<port>
                       [--scope-header <name>] [--max-body-bytes <n>] [--methods <list>] [--require-key]
                       [--tls-cert <file> --tls-key <file> [--tls-ca <file> [--scope-mtls subject|fingerprint]]]
      A reverse proxy with Idempotency-Key semantics (the middleware's) in front of any HTTP API.
      --scope-header  the request header naming the caller (an API key); keys are per caller.
      --methods       the methods whose keyed requests are forwarded once, comma-separated (default
                      POST,PATCH,PUT,DELETE); other methods pass through untouched, key or not.
      --require-key   answers a request of those methods without an Idempotency-Key 400 key-missing
                      problem+json, not forwarded (by default it passes through untouched).
      --tls-cert, --tls-key  listen with HTTPS (PEM files); --tls-ca requires a client certificate
                      that CA signed (a request without one is answered 401 problem+json).
      --scope-mtls    names the caller by its client certificate's subject or SHA-256 fingerprint.`;

/** `idemkey gateway mcp ...`: runs until the client or the upstream goes away. */
export async function gatewayCommand(argv: string[]): Promise<string | undefined> {
  const [mode, ...rest] = argv;
  if (mode === "--help" || mode === "-h") return GATEWAY_HELP;
  if (mode === "http") return httpCommand(rest);
  if (mode !== "mcp") {
    throw new UsageError(
      mode === undefined
        ? "missing the gateway's mode: idemkey gateway mcp ..."
        : `unknown gateway mode "${mode}" (mcp or http)`,
    );
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(rest);
  } catch (error) {
    throw new UsageError(`${(error as Error).message.split(". ")[0]}; run idemkey gateway --help`);
  }
  const { values, positionals } = parsed;
  if (values.help) return GATEWAY_HELP;
  if (!values.store) {
    throw new UsageError(
      `missing --store <url> (${storeDrivers()
        .map((d) => d.example)
        .join(", ")})`,
    );
  }
  const [command, ...args] = positionals;
  const upstreamUrl = values["upstream-url"];
  if (command !== undefined && upstreamUrl !== undefined) {
    throw new UsageError("give the upstream once: -- <command> [args] or --upstream-url <url>, not both");
  }
  if (command === undefined && upstreamUrl === undefined) {
    throw new UsageError(
      "missing the upstream server: -- <command> [args] or --upstream-url <http://host:port/mcp>",
    );
  }
  if (upstreamUrl !== undefined && (!/^https?:\/\/[^/]+/.test(upstreamUrl) || !URL.canParse(upstreamUrl))) {
    throw new UsageError(`--upstream-url must be an http:// or https:// URL, got "${upstreamUrl}"`);
  }
  const listen = values.listen === undefined ? undefined : listenAddress(values.listen);
  const header = values["scope-header"];
  if (header !== undefined && listen === undefined) {
    throw new UsageError("--scope-header needs --listen: a stdio gateway has one client");
  }
  if (header !== undefined && !isToken(header)) {
    throw new UsageError(`--scope-header must be a header name, got "${header}"`);
  }
  const waitMs = whole("--wait-ms", values["wait-ms"], 0);
  const callTimeoutMs = whole("--call-timeout-ms", values["call-timeout-ms"], 1);
  const sessionIdleMs = whole("--session-idle-ms", values["session-idle-ms"], 1);
  if (sessionIdleMs !== undefined && listen === undefined) {
    throw new UsageError("--session-idle-ms needs --listen: a stdio gateway has one session");
  }
  if (values["derive-keys"] === "") throw new UsageError("--derive-keys needs a scope name");
  const stdioTls = TLS_FLAGS.find((flag) => values[flag] !== undefined && listen === undefined);
  if (stdioTls !== undefined) {
    throw new UsageError(
      `--${stdioTls} needs --listen: a stdio gateway answers on its stdio, not over HTTPS`,
    );
  }
  const { tls, mtls } = tlsFlags(values, header);

  const opened = await openWritable(values.store);
  const transports = await sdk();
  const upstream = (): GatewayTransport =>
    upstreamUrl === undefined
      ? new transports.StdioClientTransport({
          command: command!,
          args,
          env: process.env as Record<string, string>,
          stderr: "inherit",
        })
      : new transports.StreamableHTTPClientTransport(new URL(upstreamUrl));
  const shared = {
    store: opened.store,
    ...(values.scope === undefined ? {} : { scope: values.scope }),
    ...(values["derive-keys"] === undefined ? {} : { deriveKeys: values["derive-keys"] }),
    ...(waitMs === undefined ? {} : { waitMs }),
    ...(callTimeoutMs === undefined ? {} : { callTimeoutMs }),
  };
  const target = upstreamUrl ?? command!;
  if (listen !== undefined) {
    const { mcpHttpGateway } = await import("../gateway/mcp-http-listener.js");
    return serveUntilStopped(
      opened,
      values.listen!,
      () =>
        mcpHttpGateway({
          ...shared,
          upstream,
          host: listen.host,
          port: listen.port,
          ...(header === undefined ? {} : { scopeHeader: header }),
          ...(sessionIdleMs === undefined ? {} : { sessionIdleMs }),
          ...(tls === undefined ? {} : { tls }),
          ...(mtls === undefined ? {} : { scopeMtls: mtls }),
        }),
      (served) => `idemkey gateway mcp: ${served.url} -> ${target}\n`,
    );
  }
  const { mcpGateway } = await import("../gateway/mcp-gateway.js");
  const gateway = mcpGateway({
    ...shared,
    upstream: upstream(),
    client: new transports.StdioServerTransport(),
  });
  try {
    await gateway.start();
  } catch (error) {
    await opened.close().catch(() => {});
    throw new RunError(`cannot start ${target}: ${(error as Error).message}`);
  }
  // The SDK's stdio server transport does not watch for the end of its input: a client that exits (or is killed)
  // closes our stdin, and the calls in progress finish and are recorded before the gateway exits.
  process.stdin.once("end", () => void gateway.close());
  void untilStopped().then(() => gateway.close());
  await gateway.closed;
  await opened.close().catch(() => {});
  return undefined;
}

/** `--listen [<host>:]<port>`. */
function listenAddress(text: string): { host: string; port: number } {
  const listen = /^(?:(.*):)?(\d+)$/.exec(text);
  const port = Number(listen?.[2]);
  if (listen === null || port > 65_535)
    throw new UsageError(`--listen must be [<host>:]<port>, got "${text}"`);
  return { host: listen[1] || "127.0.0.1", port };
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      store: { type: "string" },
      scope: { type: "string" },
      "derive-keys": { type: "string" },
      "wait-ms": { type: "string" },
      "call-timeout-ms": { type: "string" },
      listen: { type: "string" },
      "upstream-url": { type: "string" },
      "scope-header": { type: "string" },
      "session-idle-ms": { type: "string" },
      ...TLS_OPTIONS,
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
}

async function sdk() {
  try {
    const [stdio, http, server] = await Promise.all([
      import("@modelcontextprotocol/sdk/client/stdio.js"),
      import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
      import("@modelcontextprotocol/sdk/server/stdio.js"),
    ]);
    return {
      StdioClientTransport: stdio.StdioClientTransport,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      StdioServerTransport: server.StdioServerTransport,
    };
  } catch {
    throw new RunError(
      "the MCP gateway needs @modelcontextprotocol/sdk (npm install @modelcontextprotocol/sdk)",
    );
  }
}

/** Opens the `--store` URL for writing: a SQLite file that is not there yet is started, as `sqliteStore()` does. */
async function openWritable(storeUrl: string) {
  const { parseStoreUrl } = await import("../inspector/store-url.js");
  const url = parseStoreUrl(storeUrl);
  // The inspector refuses a missing file (it would show an empty ledger); an empty file is an empty database.
  if ((url.kind === "sqlite" || url.kind === "node-sqlite") && url.path && !existsSync(url.path)) {
    if (!existsSync(dirname(url.path))) throw new UsageError(`--store: no directory ${dirname(url.path)}`);
    writeFileSync(url.path, "", { flag: "a" });
  }
  return openChecked(storeUrl, "store", (store) => store.get(StorePrefix.mcp));
}

async function httpCommand(argv: string[]): Promise<string | undefined> {
  let parsed: ReturnType<typeof parseHttp>;
  try {
    parsed = parseHttp(argv);
  } catch (error) {
    throw new UsageError(`${(error as Error).message.split(". ")[0]}; run idemkey gateway --help`);
  }
  const { values, positionals } = parsed;
  if (values.help) return GATEWAY_HELP;
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  if (!values.store) throw new UsageError("missing --store <url>");
  if (!values.upstream) throw new UsageError("missing --upstream <http://host:port>");
  if (!/^https?:\/\/[^/]+/.test(values.upstream) || !URL.canParse(values.upstream)) {
    throw new UsageError(`--upstream must be an http:// or https:// URL, got "${values.upstream}"`);
  }
  if (!values.listen) throw new UsageError("missing --listen [<host>:]<port>");
  const listen = listenAddress(values.listen);
  const header = values["scope-header"];
  if (header !== undefined && !isToken(header)) {
    throw new UsageError(`--scope-header must be a header name, got "${header}"`);
  }
  const maxBodyBytes = whole("--max-body-bytes", values["max-body-bytes"], 1);
  const methods = values.methods === undefined ? undefined : methodList(values.methods);
  const { tls, mtls } = tlsFlags(values, header);
  const opened = await openWritable(values.store);
  const { httpGateway } = await import("../gateway/http-gateway.js");
  const upstream = values.upstream;
  return serveUntilStopped(
    opened,
    values.listen,
    () =>
      httpGateway({
        upstream,
        store: opened.store,
        host: listen.host,
        port: listen.port,
        ...(header === undefined ? {} : { scopeHeader: header }),
        ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }),
        ...(methods === undefined ? {} : { methods }),
        ...(values["require-key"] ? { required: true } : {}),
        ...(tls === undefined ? {} : { tls }),
        ...(mtls === undefined ? {} : { scopeMtls: mtls }),
      }),
    (gateway) => `idemkey gateway http: ${gateway.url} -> ${upstream}\n`,
  );
}

/** `--methods POST,PUT`: HTTP methods, comma-separated. */
function methodList(text: string): string[] {
  const methods = text.split(",");
  const bad = methods.find((method) => !isToken(method));
  if (bad !== undefined) {
    const which = methods.length > 1 ? ` ("${bad}" is not one)` : "";
    throw new UsageError(
      `--methods must be HTTP methods separated by commas, such as POST,PUT, got "${text}"${which}`,
    );
  }
  return methods;
}

/** `--tls-cert`, `--tls-key`, `--tls-ca` (read) and `--scope-mtls`, which needs the CA and no `--scope-header`. */
function tlsFlags(values: TlsValues, header: string | undefined) {
  const tls = tlsFiles(values["tls-cert"], values["tls-key"], values["tls-ca"]);
  const mtls = values["scope-mtls"];
  if (mtls === undefined) return { tls, mtls };
  if (mtls !== "subject" && mtls !== "fingerprint") {
    throw new UsageError(`--scope-mtls must be subject or fingerprint, got "${mtls}"`);
  }
  if (tls?.ca === undefined)
    throw new UsageError("--scope-mtls needs --tls-ca, the CA of the client certificates");
  if (header !== undefined) throw new UsageError("--scope-mtls and --scope-header are two scopes; give one");
  return { tls, mtls: mtls as "subject" | "fingerprint" };
}

/** The TLS flags both modes parse; the MCP mode takes them with `--listen` only. */
const TLS_OPTIONS = {
  "tls-cert": { type: "string" },
  "tls-key": { type: "string" },
  "tls-ca": { type: "string" },
  "scope-mtls": { type: "string" },
} as const;
const TLS_FLAGS = Object.keys(TLS_OPTIONS) as (keyof typeof TLS_OPTIONS)[];
type TlsValues = { [flag in keyof typeof TLS_OPTIONS]?: string };

/** `--tls-cert`, `--tls-key` and `--tls-ca`, read: a certificate and its key go together, a CA needs both. */
function tlsFiles(cert: string | undefined, key: string | undefined, ca: string | undefined) {
  if (cert === undefined && key === undefined) {
    if (ca !== undefined) throw new UsageError("--tls-ca needs --tls-cert and --tls-key (the gateway's own)");
    return undefined;
  }
  if (cert === undefined || key === undefined) {
    throw new UsageError(
      `${cert === undefined ? "--tls-key" : "--tls-cert"} needs ${cert === undefined ? "--tls-cert" : "--tls-key"}`,
    );
  }
  const read = (flag: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new UsageError(
        `${flag}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? "error"})`,
      );
    }
  };
  return {
    cert: read("--tls-cert", cert),
    key: read("--tls-key", key),
    ...(ca === undefined ? {} : { ca: read("--tls-ca", ca) }),
  };
}

function parseHttp(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      store: { type: "string" },
      upstream: { type: "string" },
      listen: { type: "string" },
      "scope-header": { type: "string" },
      "max-body-bytes": { type: "string" },
      methods: { type: "string" },
      "require-key": { type: "boolean" },
      ...TLS_OPTIONS,
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
}
