#!/usr/bin/env node
import { fstatSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { registerDriver, storeDrivers } from "../drivers/list.js";
import { CanonicalizationError } from "../errors/canonicalization-error.js";
import { IdemkeyError } from "../errors/idemkey-error.js";
import { isLoopback } from "../inspector/loopback.js";
import { checkName } from "../inspector/options.js";
import { DEFAULT_REDACT } from "../inspector/redact.js";
import { canonicalize } from "../key/canonicalize.js";
import { idempotencyKey } from "../key/idempotency-key.js";
import { RunError, UsageError } from "./errors.js";
import { GATEWAY_HELP, gatewayCommand } from "./gateway.js";
import { importModule } from "./import-module.js";
import { openLedger } from "./open-store.js";
import { RECONCILE_HELP, reconcileCommand } from "./reconcile.js";
import { serveUntilStopped } from "./serve.js";
import { whole } from "./whole.js";

/** One usage line per store driver, from the driver list: what `--store` takes, and what it needs installed. */
const storeLines = () =>
  storeDrivers()
    .map((driver) => {
      const url = `${driver.example}${driver.params.length > 0 ? `[?${driver.params.join("=&")}=]` : ""}`;
      // The first peer is the one opening a URL imports.
      const peer = driver.peers[0];
      return `        ${url.padEnd(32)} ${driver.name}${peer ? `; needs ${peer.package}` : ""}`;
    })
    .join("\n");

const HELP = () => `idemkey — idempotency keys for AI agents' tool calls

Usage:
  idemkey key --task <id> --tool <name> [--args <json>] [--step <step> | --step-json <json>]
      Prints the key: lowercase hex SHA-256 of the RFC 8785 canonical JSON of
      [task, tool, args] (or [task, tool, args, step] with a step).
      Without --args the arguments JSON is read from standard input.
      --step is taken as a JSON number when it is one, otherwise as a string;
      --step-json takes the step as JSON ('"2"' is the string 2, '2' the number).
  idemkey canon [<json>]
      Prints the RFC 8785 canonical form of the JSON (or of standard input).
  idemkey inspect --store <url> [--port <n>] [--read-only] [--user <name>] [--redact <fields>]
                  [--token <token>] [--host <addr> --allow-remote] [--max-records <n>] [--driver <module>]
                  [--secret <text>]
      Serves the ledger inspector, a web page of every keyed call with approve, deny and resolve,
      on http://127.0.0.1:<port>/ until interrupted. <url> is one of:
${storeLines()}
      --port       0 (the default) picks a free port; the URL printed says which.
      --read-only  hides the actions; their endpoints answer 403.
      --user       who the actions are recorded as done by when the page names no one
                   (default: the operating system user).
      --redact     the fields masked in arguments and results, comma-separated, matched
                   case-insensitively anywhere in a name ("none" masks nothing; default:
                   ${DEFAULT_REDACT.join(",")}).
      --token      the token actions need (16+ characters; default: a random one, printed).
      --host       the address to listen on (default 127.0.0.1); anything but loopback also
                   needs --allow-remote, and then every request needs the token (plain HTTP:
                   trusted networks only).
      --max-records  the most calls the page reads from the ledger (default 10000); past it the page
                   says it shows the first ones only.
      --secret     keys the short ids of what is masked (scopeId, holder) with HMAC-SHA-256, 16+
                   characters; default: a random one, so the ids change at each start. Give the same
                   one to compare ids across restarts and --list runs.
      --driver     a module (a path or a package) whose default export is a store driver of your own
                   (defineDriver from idemkey/inspector); its URLs then open with --store. Repeatable.
  idemkey inspect --store <url> --list [--redact <fields>] [--max-records <n>] [--secret <text>]
      Prints every record the page lists, one JSON object a line, and exits: the ledger's calls
      ("kind":"call") and the owner's keys, the middleware's, mcpDedupe's and the gateway's alike
      ("kind":"http" or "mcp": scope, key, state, tool or method and target, the recorded result).
${GATEWAY_HELP}
${RECONCILE_HELP}
  idemkey --help | --version

Exit codes: 0 success, 1 the store or the port failed, 2 bad input (one line on stderr says what and
where).`;

/** No command at all: the usage on stderr, exit code 2. */
class NoCommand extends Error {}

function main(argv: string[]): string | Promise<string | undefined> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
      throw new NoCommand();
    case "help":
    case "--help":
    case "-h":
      return HELP();
    case "--version":
    case "-v":
      return version();
    case "key":
      return keyCommand(rest);
    case "canon":
      return canonCommand(rest);
    case "inspect":
      return inspectCommand(rest);
    case "gateway":
      return gatewayCommand(rest);
    case "reconcile":
      return reconcileCommand(rest);
    default:
      throw new UsageError(`unknown command "${command}"; run idemkey --help`);
  }
}

async function keyCommand(argv: string[]): Promise<string> {
  const { values, positionals } = parse(argv, {
    task: { type: "string" },
    tool: { type: "string" },
    args: { type: "string" },
    step: { type: "string" },
    "step-json": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return HELP();
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}"; pass JSON with --args`);
  if (!values.task) throw new UsageError("missing --task <id> (the task the call belongs to)");
  if (!values.tool) throw new UsageError("missing --tool <name>");
  if (values.step !== undefined && values["step-json"] !== undefined) {
    throw new UsageError("--step and --step-json are one step; pass one of them");
  }
  const stepJson = values["step-json"];
  const step =
    stepJson !== undefined
      ? parseJson(stepJson, "--step-json")
      : values.step === undefined
        ? undefined
        : parseStep(values.step);
  const args = parseJson(values.args ?? (await readStdin("--args <json>")), "--args");
  return idempotencyKey(
    values.task,
    values.tool,
    args,
    step === undefined ? undefined : { step: step as string | number },
  );
}

async function canonCommand(argv: string[]): Promise<string> {
  const { values, positionals } = parse(argv, { help: { type: "boolean", short: "h" } });
  if (values.help) return HELP();
  if (positionals.length > 1) throw new UsageError("canon takes one JSON argument; quote it");
  return canonicalize(parseJson(positionals[0] ?? (await readStdin("<json>")), "the input"));
}

async function inspectCommand(argv: string[]): Promise<string | undefined> {
  const { values, positionals } = parse(argv, {
    store: { type: "string" },
    port: { type: "string" },
    host: { type: "string" },
    "allow-remote": { type: "boolean" },
    token: { type: "string" },
    "read-only": { type: "boolean" },
    redact: { type: "string" },
    user: { type: "string" },
    "max-records": { type: "string" },
    driver: { type: "string", multiple: true },
    list: { type: "boolean" },
    secret: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  // Before --help, so that the usage lists the drivers added too.
  for (const spec of values.driver ?? []) await addDriver(spec);
  if (values.help) return HELP();
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}"; run idemkey --help`);
  const maxRecords = whole("--max-records", values["max-records"], 1);
  if (!values.store) {
    const examples = storeDrivers().map((driver) => driver.example);
    throw new UsageError(`missing --store <url> (${examples.join(", ")})`);
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!/^\d+$/.test(values.port ?? "0") || port > 65_535) {
    throw new UsageError(`--port must be a whole number from 0 to 65535, got "${values.port}"`);
  }
  const host = values.host ?? "127.0.0.1";
  if (!isLoopback(host) && !values["allow-remote"]) {
    throw new UsageError(
      `--host ${host} is not a loopback address; add --allow-remote to serve other machines`,
    );
  }
  if (values.token !== undefined && values.token.length < 16) {
    throw new UsageError("--token must be at least 16 characters");
  }
  if (values.secret !== undefined && values.secret.length < 16) {
    throw new UsageError("--secret must be at least 16 characters");
  }
  const secret = values.secret === undefined ? {} : { secret: values.secret };
  const redact = values.redact === undefined ? undefined : parseRedact(values.redact);
  const user = values.user === undefined ? undefined : checkName("--user", values.user);
  if (values.list) {
    const serving = ["port", "host", "allow-remote", "token", "read-only", "user"] as const;
    const flag = serving.find((name) => values[name] !== undefined);
    if (flag !== undefined)
      throw new UsageError(`--list prints and exits; --${flag} is for serving the page`);
  }

  const { serveInspector } = await import("../inspector/index.js");
  const opened = await openLedger(values.store);
  if (values.list) {
    const { listRecords } = await import("../inspector/list.js");
    try {
      const { records, truncated } = await listRecords(opened.store, {
        ...secret,
        ...(redact === undefined ? {} : { redact }),
        ...(maxRecords === undefined ? {} : { maxRecords }),
      });
      const lines = records.map((record) => JSON.stringify(record));
      if (truncated)
        process.stderr.write(`idemkey: more than ${maxRecords ?? 10_000} records; the first ones only\n`);
      return lines.length === 0 ? undefined : lines.join("\n");
    } finally {
      await opened.close().catch(() => {});
    }
  }
  return serveUntilStopped(
    opened,
    `${host}:${port}`,
    () =>
      serveInspector({
        store: opened.store,
        label: opened.label,
        host,
        port,
        allowRemote: values["allow-remote"] === true,
        readOnly: values["read-only"] === true,
        ...(values.token === undefined ? {} : { token: values.token }),
        ...secret,
        ...(redact === undefined ? {} : { redact }),
        ...(user === undefined ? {} : { user }),
        ...(maxRecords === undefined ? {} : { maxRecords }),
      }),
    (served) =>
      `idemkey inspector for ${opened.label}${values["read-only"] ? " (read-only)" : ""}\n` +
      `  open ${served.url}#token=${encodeURIComponent(served.token)}\n` +
      `  token: ${served.token} (actions need it; the page reads it from the URL's #fragment, never sent to the server)\n` +
      "  Ctrl-C stops it.\n",
  );
}

/** Imports a `--driver` module and registers its default export (or its `driver` export) as a store driver. */
async function addDriver(spec: string): Promise<void> {
  const module = await importModule("--driver", spec);
  const driver = module.default ?? module.driver;
  if (typeof driver !== "object" || driver === null || !("engine" in driver)) {
    throw new UsageError(`--driver ${spec} exports no store driver (export default defineDriver({ ... }))`);
  }
  registerDriver(driver as Parameters<typeof registerDriver>[0]);
}

function parseRedact(text: string): string[] {
  if (text.trim() === "none") return [];
  const fields = text.split(",").map((f) => f.trim());
  if (fields.some((f) => f === "")) {
    throw new UsageError(`--redact takes field names separated by commas, got "${text}"`);
  }
  return fields;
}

type ParseOptions = NonNullable<Parameters<typeof parseArgs>[0]>["options"];

function parse<T extends ParseOptions>(argv: string[], options: T) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`${(error as Error).message.split(". ")[0]}; run idemkey --help`);
  }
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${what} is not valid JSON: ${(error as Error).message}`);
  }
}

function parseStep(text: string): string | number {
  const number = Number(text);
  return text.trim() !== "" && Number.isFinite(number) && String(number) === text.trim() ? number : text;
}

/**
 * Reads all of standard input as a stream: `readFileSync(0)` fails with EAGAIN on a non-blocking pipe whose writer
 * has not written yet (`(sleep 1; echo '{}') | idemkey key ...`).
 */
async function readStdin(flag: string): Promise<string> {
  if (process.stdin.isTTY) throw new UsageError(`no JSON given: pass ${flag} or pipe it on standard input`);
  // A directory on stdin (`< /`) reads as an empty stream rather than failing: say what it is instead.
  if (fstatSync(0).isDirectory()) {
    throw new UsageError("cannot read standard input: EISDIR: it is a directory, not JSON");
  }
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  } catch (error) {
    throw new UsageError(`cannot read standard input: ${(error as Error).message}`);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** A path of thousands of `[0]` (input nested too deep) cut to its start and a count: the line stays readable. */
function shortPath(path: string): string {
  const segments = path.match(/\[[^\]]*\]|\.[^.[]+|^[^.[]+/g) ?? [path];
  if (segments.length <= 17) return path;
  return `${segments.slice(0, 9).join("")}... (${segments.length - 9} levels deeper)`;
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

try {
  const output = await main(process.argv.slice(2));
  if (output !== undefined) process.stdout.write(`${output}\n`);
} catch (error) {
  if (error instanceof NoCommand) {
    process.stderr.write(`${HELP()}\n`);
    process.exitCode = 2;
  } else if (error instanceof CanonicalizationError) {
    process.stderr.write(`idemkey: ${shortPath(error.path)}: ${error.reason}\n`);
    process.exitCode = 2;
  } else if (error instanceof RunError) {
    // Before the family's exit 2: a RunError is one of idemkey's errors too, but the input was fine.
    process.stderr.write(`idemkey: ${error.message}\n`);
    process.exitCode = 1;
  } else if (error instanceof UsageError || error instanceof IdemkeyError || error instanceof TypeError) {
    process.stderr.write(`idemkey: ${error.message}\n`);
    process.exitCode = 2;
  } else {
    throw error;
  }
}
