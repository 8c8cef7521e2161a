#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { IdemkeyError } from "../errors/idemkey-error.js";
import { canonicalize } from "../key/canonicalize.js";
import { idempotencyKey } from "../key/idempotency-key.js";

const HELP = `idemkey — idempotency keys for AI agents' tool calls

Usage:
  idemkey key --task <id> --tool <name> [--args <json>] [--step <step>]
      Prints the key: lowercase hex SHA-256 of the RFC 8785 canonical JSON of
      [task, tool, args] (or [task, tool, args, step] with --step).
      Without --args the arguments JSON is read from standard input.
      --step is taken as a JSON number when it is one, otherwise as a string.
  idemkey canon [<json>]
      Prints the RFC 8785 canonical form of the JSON (or of standard input).
  idemkey --help | --version

Exit codes: 0 success, 2 bad input (one line on stderr says what and where).`;

/** A usage or input problem: one line on stderr, exit code 2, never a stack trace. */
class UsageError extends Error {}

function main(argv: string[]): string {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case "help":
    case "--help":
    case "-h":
      return HELP;
    case "--version":
    case "-v":
      return version();
    case "key":
      return keyCommand(rest);
    case "canon":
      return canonCommand(rest);
    default:
      throw new UsageError(`unknown command "${command}"; run idemkey --help`);
  }
}

function keyCommand(argv: string[]): string {
  const { values, positionals } = parse(argv, {
    task: { type: "string" },
    tool: { type: "string" },
    args: { type: "string" },
    step: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return HELP;
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}"; pass JSON with --args`);
  if (!values.task) throw new UsageError("missing --task <id> (the task the call belongs to)");
  if (!values.tool) throw new UsageError("missing --tool <name>");
  const args = parseJson(values.args ?? readStdin("--args <json>"), "--args");
  const step = values.step === undefined ? undefined : parseStep(values.step);
  return idempotencyKey(values.task, values.tool, args, step === undefined ? undefined : { step });
}

function canonCommand(argv: string[]): string {
  const { values, positionals } = parse(argv, { help: { type: "boolean", short: "h" } });
  if (values.help) return HELP;
  if (positionals.length > 1) throw new UsageError("canon takes one JSON argument; quote it");
  return canonicalize(parseJson(positionals[0] ?? readStdin("<json>"), "the input"));
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

function readStdin(flag: string): string {
  if (process.stdin.isTTY) throw new UsageError(`no JSON given: pass ${flag} or pipe it on standard input`);
  return readFileSync(0, "utf8");
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

try {
  process.stdout.write(`${main(process.argv.slice(2))}\n`);
} catch (error) {
  if (error instanceof UsageError || error instanceof IdemkeyError || error instanceof TypeError) {
    process.stderr.write(`idemkey: ${error.message}\n`);
    process.exitCode = 2;
  } else {
    throw error;
  }
}
