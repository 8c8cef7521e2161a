import { existsSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { storeDrivers } from "../drivers/list.js";
import { RunError, UsageError } from "./errors.js";

export const GATEWAY_HELP = `  idemkey gateway mcp --store <url> [--scope <name>] [--derive-keys <scope>] [--wait-ms <n>]
                      [--call-timeout-ms <n>] -- <command> [args...]
      Starts <command> as a stdio MCP server and answers an MCP client on this process's stdio,
      passing every message through except tools/call with an idempotency key in _meta
      ("dev.idemkey/idempotency-key"), which is deduped in the store (docs/gateway.md).
      --derive-keys  keys calls that carry none from [<scope>, tool, arguments], as the harness would.
      --wait-ms      how long a duplicate of a running call waits for its answer (default 10000).
  idemkey gateway http --store <url> --upstream <http://host:port> --listen [<host>:]<port>
                       [--scope-header <name>] [--max-body-bytes <n>]
      A reverse proxy with Idempotency-Key semantics (the middleware's) in front of any HTTP API.
      --scope-header  the request header naming the caller (an API key); keys are per caller.`;

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
  if (command === undefined)
    throw new UsageError("missing the upstream server's command: ... -- <command> [args]");
  const waitMs = whole("--wait-ms", values["wait-ms"], 0);
  const callTimeoutMs = whole("--call-timeout-ms", values["call-timeout-ms"], 1);
  if (values["derive-keys"] === "") throw new UsageError("--derive-keys needs a scope name");

  const opened = await openWritable(values.store);
  const { StdioClientTransport, StdioServerTransport } = await sdk();
  const { mcpGateway } = await import("../gateway/mcp-gateway.js");
  const upstream = new StdioClientTransport({
    command,
    args,
    env: process.env as Record<string, string>,
    stderr: "inherit",
  });
  const gateway = mcpGateway({
    upstream,
    client: new StdioServerTransport(),
    store: opened.store,
    ...(values.scope === undefined ? {} : { scope: values.scope }),
    ...(values["derive-keys"] === undefined ? {} : { deriveKeys: values["derive-keys"] }),
    ...(waitMs === undefined ? {} : { waitMs }),
    ...(callTimeoutMs === undefined ? {} : { callTimeoutMs }),
  });
  try {
    await gateway.start();
  } catch (error) {
    await opened.close().catch(() => {});
    throw new RunError(`cannot start ${command}: ${(error as Error).message}`);
  }
  // The SDK's stdio server transport does not watch for the end of its input: a client that exits (or is killed)
  // closes our stdin, and the calls in progress finish and are recorded before the gateway exits.
  process.stdin.once("end", () => void gateway.close());
  process.once("SIGINT", () => void gateway.close());
  process.once("SIGTERM", () => void gateway.close());
  await gateway.closed;
  await opened.close().catch(() => {});
  return undefined;
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
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
}

function whole(flag: string, text: string | undefined, min: number): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(`${flag} must be a whole number of at least ${min}, got "${text}"`);
  }
  return value;
}

async function sdk() {
  try {
    const [client, server] = await Promise.all([
      import("@modelcontextprotocol/sdk/client/stdio.js"),
      import("@modelcontextprotocol/sdk/server/stdio.js"),
    ]);
    return {
      StdioClientTransport: client.StdioClientTransport,
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
  const { openStore, parseStoreUrl } = await import("../inspector/store-url.js");
  const url = parseStoreUrl(storeUrl);
  // The inspector refuses a missing file (it would show an empty ledger); an empty file is an empty database.
  if ((url.kind === "sqlite" || url.kind === "node-sqlite") && url.path && !existsSync(url.path)) {
    if (!existsSync(dirname(url.path))) throw new UsageError(`--store: no directory ${dirname(url.path)}`);
    writeFileSync(url.path, "", { flag: "a" });
  }
  const opened = await openStore(storeUrl);
  try {
    await opened.store.get("mcp:");
  } catch (error) {
    await opened.close().catch(() => {});
    throw new RunError(`cannot read the store at ${opened.label}: ${(error as Error).message}`);
  }
  return opened;
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
  const listen = /^(?:(.*):)?(\d+)$/.exec(values.listen);
  const port = Number(listen?.[2]);
  if (listen === null || port > 65_535) {
    throw new UsageError(`--listen must be [<host>:]<port>, got "${values.listen}"`);
  }
  const header = values["scope-header"];
  if (header !== undefined && !/^[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(header)) {
    throw new UsageError(`--scope-header must be a header name, got "${header}"`);
  }
  const maxBodyBytes = whole("--max-body-bytes", values["max-body-bytes"], 1);
  const opened = await openWritable(values.store);
  const { httpGateway } = await import("../gateway/http-gateway.js");
  let gateway: Awaited<ReturnType<typeof httpGateway>>;
  try {
    gateway = await httpGateway({
      upstream: values.upstream,
      store: opened.store,
      host: listen[1] || "127.0.0.1",
      port,
      ...(header === undefined ? {} : { scopeHeader: header }),
      ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }),
    });
  } catch (error) {
    await opened.close().catch(() => {});
    throw new RunError(`cannot listen on ${values.listen}: ${(error as Error).message}`);
  }
  process.stdout.write(`idemkey gateway http: ${gateway.url} -> ${values.upstream}\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await gateway.close();
  await opened.close().catch(() => {});
  return undefined;
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
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
}
