import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach } from "vitest";
import { onCleanup } from "../support/cleanup.js";
import { runCli, startCli } from "../support/cli.js";
import { lineReader } from "../support/lines.js";

// What the gateway tests set up around the gateway: the upstreams, the gateway itself from the CLI, the folders
// they write in. Effects are read back from the upstreams' own files, never through idemkey.
const EFFECT_SERVER = fileURLToPath(new URL("../fixtures/effect-server.py", import.meta.url));
const MCP_UPSTREAM = fileURLToPath(new URL("./fixtures/http-upstream.mjs", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Polls `check` every 50 ms until it gives something truthy, and resolves with it; gives up after 30 s. */
export async function until<T>(check: () => T | undefined | false): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const value = check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("gave up waiting");
}

/** A temp folder for the test file, removed after it; `next()` makes a fresh folder in it for one test's run. */
export function tempRuns(prefix: string): { dir: string; next: () => string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let runs = 0;
  return {
    dir,
    next() {
      const run = join(dir, `run-${++runs}`);
      mkdirSync(run);
      return run;
    },
  };
}

const running = new Set<() => void>();
// A child outlives no test: the next test starts from fresh servers, and a crashed test process leaves none behind.
afterEach(() => {
  for (const stop of running) stop();
  running.clear();
});

/** Kills `child` after the test that started it (or when the test process exits first); returns it. */
export function started<C extends ChildProcess>(child: C): C {
  running.add(
    onCleanup(() => {
      if (child.exitCode === null) child.kill("SIGKILL");
    }),
  );
  return child;
}

/** The lines of `file`, none while it does not exist: how the upstreams record their effects. */
export function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

/** The port a server wrote to `file` once it listened (whole, by a rename). */
export function portFrom(file: string): Promise<string> {
  return until(() => existsSync(file) && readFileSync(file, "utf8"));
}

/**
 * Python's http.server (test/fixtures/effect-server.py) writing in `run`: its URL, and `effects()`, the request
 * bodies it appended to its own log, one per request it processed.
 */
export async function effectServer(run: string): Promise<{ url: string; effects: () => string[] }> {
  const portFile = join(run, "port");
  const log = join(run, "effects.log");
  started(spawn("python3", [EFFECT_SERVER, portFile, log], { stdio: "ignore" }));
  return { url: `http://127.0.0.1:${await portFrom(portFile)}`, effects: () => lines(log) };
}

/**
 * The upstream MCP server over Streamable HTTP (test/gateway/fixtures/http-upstream.mjs) writing in `run`, answering
 * JSON (`json`) or over SSE (`sse`): its URL, its process, and `effects()`, the lines its tools appended to its own
 * file.
 */
export async function mcpUpstream(run: string, mode: "json" | "sse") {
  const effects = join(run, "effects.log");
  writeFileSync(effects, "");
  const portFile = join(run, "port");
  const child = started(
    spawn(process.execPath, [MCP_UPSTREAM, portFile, effects, mode], { cwd: ROOT, stdio: "ignore" }),
  );
  const port = await portFrom(portFile);
  return { url: `http://127.0.0.1:${port}/mcp`, effects: () => lines(effects), child };
}

/**
 * `idemkey gateway <kind> --store sqlite:<db> --listen 127.0.0.1:0 <flags>` from the CLI; resolves with the URL
 * its first line prints once it listens, or rejects with its stderr when it exits first.
 */
export async function startGateway(kind: "http" | "mcp", db: string, flags: string[]) {
  const child = started(
    startCli(["gateway", kind, "--store", `sqlite:${db}`, "--listen", "127.0.0.1:0", ...flags]),
  );
  let err = "";
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<undefined>((resolve) => child.once("close", () => resolve(undefined)));
  const line = await Promise.race([lineReader(child.stdout!)(), exited]);
  const url = line === undefined ? undefined : /^idemkey gateway \w+: (\S+) -> /.exec(line)?.[1];
  if (url === undefined)
    throw new Error(`the gateway did not start: ${[line, err].filter(Boolean).join("\n")}`);
  return { url, child, stderr: () => err };
}

/**
 * `idemkey gateway http` from the CLI in front of an effect server, both writing in `run`, the gateway its records
 * to `db`; `flags` say how it tells callers apart (and any TLS).
 */
export async function startHttpGateway(run: string, flags: string[]) {
  const upstream = await effectServer(run);
  const db = join(run, "gateway.db");
  const { url } = await startGateway("http", db, ["--upstream", upstream.url, ...flags]);
  return { url, effects: upstream.effects, db };
}

/** The scopes of the keys recorded in the SQLite file `db`, as `idemkey inspect --list` prints them, sorted. */
export async function scopesIn(db: string): Promise<string[]> {
  const { stdout, code } = await runCli(["inspect", "--store", `sqlite:${db}`, "--list", "--redact", "none"]);
  if (code !== 0) throw new Error(`idemkey inspect exited ${code}`);
  return stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { scope: string }).scope)
    .sort();
}

/** Entities named `name` in server-memory's own file (one JSON object a line). */
export function entities(file: string, name: string): number {
  if (!existsSync(file)) return 0;
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as { type: string; name: string })
    .filter((item) => item.type === "entity" && item.name === name).length;
}
