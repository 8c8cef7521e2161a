import { parseArgs } from "node:util";
import { storeDrivers } from "../drivers/list.js";
import { isTool } from "../harness/define-tool.js";
import type { Tool } from "../harness/types.js";
import { UsageError } from "./errors.js";
import { importModule } from "./import-module.js";
import { openLedger } from "./open-store.js";
import { untilStopped } from "./until-stopped.js";
import { whole } from "./whole.js";

export const RECONCILE_HELP = `  idemkey reconcile --store <url> --tools <module> [--once] [--id <name>] [--concurrency <n>]
                    [--interval-ms <n>]
      Decides the calls whose outcome is unknown by asking each tool's reconcile (docs/reconciler.md):
      sweeps every --interval-ms (default 30000) until interrupted, printing one JSON line per
      decision; --once sweeps once and prints what it did. <module> (a path or a package) exports
      the tools, made by defineTool (its default export, an array or object of them, or its named
      exports). Several reconcilers may share a store: each record is decided once.
      --id  who the decisions are recorded as made by (default reconciler:<random>).`;

/** `idemkey reconcile ...`: one sweep (`--once`), or sweeps until SIGINT or SIGTERM. */
export async function reconcileCommand(argv: string[]): Promise<string | undefined> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new UsageError(`${(error as Error).message.split(". ")[0]}; run idemkey --help`);
  }
  const { values, positionals } = parsed;
  if (values.help) return RECONCILE_HELP;
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}"; run idemkey --help`);
  if (!values.store) {
    throw new UsageError(
      `missing --store <url> (${storeDrivers()
        .map((d) => d.example)
        .join(", ")})`,
    );
  }
  if (!values.tools) throw new UsageError("missing --tools <module> (a module exporting the tools)");
  const concurrency = whole("--concurrency", values.concurrency, 1);
  const intervalMs = whole("--interval-ms", values["interval-ms"], 0);
  if (values.id === "") throw new UsageError("--id needs a name");
  const tools = await loadTools(values.tools);

  const { createReconciler } = await import("../reconciler/create-reconciler.js");
  const opened = await openLedger(values.store);
  const reconciler = createReconciler({
    store: opened.store,
    tools,
    ...(values.id === undefined ? {} : { id: values.id }),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(intervalMs === undefined ? {} : { intervalMs }),
    onEvent: (event) => {
      if (event.type === "failed") {
        process.stderr.write(`idemkey reconcile: ${event.key}: ${String(event.error)}\n`);
      } else if (event.type !== "conflict") {
        process.stdout.write(`${JSON.stringify(event)}\n`);
      }
    },
  });
  const stop = () => void reconciler.stop();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    if (values.once) {
      const report = await reconciler.sweep();
      return JSON.stringify({ reconciler: reconciler.id, ...report });
    }
    process.stderr.write(`idemkey reconcile: ${reconciler.id} on ${opened.label}; Ctrl-C stops it\n`);
    reconciler.start({
      onError: (error) =>
        process.stderr.write(`idemkey reconcile: sweep failed: ${(error as Error).message}\n`),
    });
    await untilStopped();
    await reconciler.stop();
    return undefined;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    await opened.close().catch(() => {});
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      store: { type: "string" },
      tools: { type: "string" },
      once: { type: "boolean" },
      id: { type: "string" },
      concurrency: { type: "string" },
      "interval-ms": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

/** The module's tools: its default export (an array or an object of tools), else its named exports. */
async function loadTools(spec: string): Promise<Tool<never, unknown>[]> {
  const module = await importModule("--tools", spec);
  const fallback = module.default;
  const exported =
    Array.isArray(fallback) || (typeof fallback === "object" && fallback !== null && !isTool(fallback))
      ? Object.values(fallback)
      : Object.values(module);
  const tools = exported.filter(isTool) as Tool<never, unknown>[];
  if (tools.length === 0) {
    throw new UsageError(
      `--tools ${spec} exports no tool made by defineTool() (export them, or export default [tool, ...]); ` +
        "the module must import defineTool from the same idemkey as this command",
    );
  }
  return tools;
}
