/*
 * Runs the example's Worker (worker.ts) in workerd, locally and offline: bundled with esbuild, started by Miniflare
 * with its Durable Objects' SQLite under `persist`, so that a runtime started again on the same directory finds
 * what the previous one wrote. Shared by the example (index.ts), its test and the bench.
 */
import { builtinModules } from "node:module";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";

const entry = fileURLToPath(new URL("./worker.ts", import.meta.url));

/** The example's Worker, bundled once per process. */
let bundled: Promise<string> | undefined;
export function bundleWorker(): Promise<string> {
  bundled ??= bundleForWorkerd(entry);
  return bundled;
}

/** A Worker module as workerd loads it: one ES module importing only workerd's built-ins. */
export async function bundleForWorkerd(path: string): Promise<string> {
  const result = await build({
    entryPoints: [path],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2024",
    conditions: ["workerd", "worker", "browser"],
    // workerd's own modules; with nodejs_compat it also resolves Node's built-ins by their bare names ("path"),
    // which a dependency of the agents package imports.
    external: ["cloudflare:*", "node:*", ...builtinModules],
    write: false,
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}

export interface StartOptions {
  /** The directory the Durable Objects' SQLite is kept in, across runtimes. */
  persist: string;
  /** Where workerd's and Miniflare's log lines go; kept, not printed, so that a passing test stays quiet. */
  log?: (line: string) => void;
}

export interface Runtime {
  /** The Worker's address on loopback. */
  url: URL;
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Stops workerd: every isolate and object in memory is gone, the persisted storage stays. */
  dispose(): Promise<void>;
}

export async function startWorker(options: StartOptions): Promise<Runtime> {
  const keep = options.log ?? (() => {});
  // Miniflare 5 takes a new shape of options; its converter still reads the familiar one.
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      name: "cloudflare-agents",
      modules: true,
      script: await bundleWorker(),
      compatibilityDate: "2026-08-22",
      compatibilityFlags: ["nodejs_compat"],
      durableObjects: {
        Assistant: { className: "Assistant", useSQLite: true },
        TICKETS: { className: "Tickets", useSQLite: true },
        DESK: { className: "Desk", useSQLite: true },
        LEDGER: { className: "Ledger", useSQLite: true },
      },
      resourcePersistencePath: options.persist,
      telemetry: { enabled: false },
      // Offline: no request for the real Request.cf object, a placeholder instead.
      cf: false,
      log: new KeptLog(keep),
      handleStructuredLogs: (entry) => keep(`[workerd ${entry.level}] ${entry.message}`),
    }),
  );
  const url = await mf.ready;
  return {
    url,
    fetch: (path, init) => fetch(new URL(path, url), init),
    dispose: () => mf.dispose(),
  };
}

/** Miniflare's own lines, kept with workerd's. */
class KeptLog extends Log {
  constructor(private readonly keep: (line: string) => void) {
    super(LogLevel.WARN);
  }
  override log(message: string): void {
    this.keep(message);
  }
}
