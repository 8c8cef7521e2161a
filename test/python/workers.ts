import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { postgresStore } from "../../src/postgres/index.js";
import { redisStore } from "../../src/redis/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import type { Store } from "../../src/store/types.js";
import { PG_URL, postgresService, REDIS_URL, redisService } from "../support/services.js";
import { tsChildArgs } from "../support/ts-child.js";
import { PYTHON } from "./support.js";

// The workers of the cross-language tests (python/tests/worker.py and fixtures/worker.ts, the same tools in each
// language), the fake owner they append to, and the shared stores both open.

/** The arguments every worker's call carries. */
export const ARGS = { service: "api", version: 3 };

export type Lang = "python" | "ts";
export type Call = { task: string; effect: "keyed" | "idempotent" | "unguarded" };
/** A worker's one argument, read the same way by both workers (python/tests/worker.py's docstring). */
export type Config = {
  store: string;
  owner: string;
  calls: Call[];
  leaseMs?: number;
  hang?: boolean;
  hangAt?: number;
  ready?: boolean;
  toolMs?: number;
  /** The tool records its effect at the owner, then fails as if the answer were lost. */
  loseAnswer?: boolean;
  /** The ledger format the worker's harness writes. @default 1 */
  ledgerVersion?: 1 | 2;
};
export type Result = {
  task: string;
  value?: { by: Lang; pid: number; attempt: number };
  replayed?: boolean;
  error?: string;
  reason?: string;
};
/** One line of the owner file: a tool's start, or its effect. */
export type Line = {
  event: "start" | "effect";
  key: string;
  lang: Lang;
  pid: number;
  attempt?: number;
  effect: string;
};

export interface Running {
  child: ChildProcess;
  /** With `config.ready`: resolves once the worker is set up and waits for `go`. */
  ready: Promise<void>;
  go(): void;
  /** The worker's results, or `undefined` when it was SIGKILLed. */
  done: Promise<Result[] | undefined>;
}

export function start(lang: Lang, config: Config): Running {
  const [command, args] =
    lang === "python"
      ? [PYTHON, ["python/tests/worker.py", JSON.stringify(config)]]
      : [
          process.execPath,
          [...tsChildArgs(new URL("./fixtures/worker.ts", import.meta.url)), JSON.stringify(config)],
        ];
  const child = spawn(command, args, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
  });
  let out = "";
  let err = "";
  let said: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    said = resolve;
  });
  child.stdout!.on("data", (chunk) => {
    out += chunk;
    if (out.startsWith("ready\n")) said();
  });
  child.stderr!.on("data", (chunk) => {
    err += chunk;
  });
  const done = new Promise<Result[] | undefined>((resolve, reject) => {
    child.on("close", (code, signal) => {
      if (signal === "SIGKILL") resolve(undefined);
      else if (code !== 0) reject(new Error(`${lang} worker exited with ${code}: ${err.slice(-3000)}`));
      else resolve((JSON.parse(out.trim().split("\n").pop()!) as { results: Result[] }).results);
    });
  });
  done.catch(() => {});
  if (!config.ready) child.stdin!.end();
  return { child, ready, go: () => child.stdin!.end("go\n"), done };
}

/** Starts the workers together, once each is set up, and resolves with them started. */
export async function together(workers: Running[]): Promise<Running[]> {
  await Promise.race([
    Promise.all(workers.map((w) => w.ready)),
    ...workers.map((w) => w.done.then(() => {})),
  ]);
  for (const w of workers) w.go();
  return workers;
}

/** Runs a worker to its end and resolves with its results. */
export const run = async (lang: Lang, config: Config) => (await start(lang, config).done)!;

/** The owner file's lines so far. */
export function owner(path: string): Line[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Line);
}

/** Resolves once `check` holds, asked every 10 ms: the event a test waits for, read as it happens. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 6000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`still waiting for ${what} after 6,000 looks`);
}

/** Resolves once the owner file holds a line `match` accepts. */
export function until(path: string, match: (line: Line) => boolean): Promise<void> {
  return waitFor(`a matching line in ${path}`, () => owner(path).some(match));
}

export interface Backend {
  name: string;
  /** Why it is skipped: its server does not answer (outside CI). */
  skip: string | undefined;
  /** A store spec for the workers, fresh for each test (a new file, table or prefix). */
  spec(test: string): string;
  /** The same store, opened in this process. */
  open(spec: string): Promise<Store>;
}

/**
 * One SQLite file (in `dir`), one PostgreSQL table and one Redis prefix, each new for each `spec`. The servers are
 * shared: `cleanup` drops the tables and deletes the prefixes this run made (never a flush).
 */
export async function sharedBackends(
  dir: string,
): Promise<{ backends: Backend[]; cleanup(): Promise<void> }> {
  const runId = `${process.pid}_${Date.now().toString(36)}`;
  const pgService = await postgresService();
  const redisFound = await redisService();
  const tables: string[] = [];
  const prefixes: string[] = [];
  const backends: Backend[] = [
    {
      name: "one SQLite file",
      skip: undefined,
      spec: (test) => `sqlite:${join(dir, `${test}.db`)}`,
      open: async (spec) => sqliteStore(spec.slice("sqlite:".length)),
    },
    {
      name: "one PostgreSQL table",
      skip: pgService.skip,
      spec: (test) => {
        const table = `idemkey_x_${runId}_${test.replace(/[^a-z0-9]/gi, "_")}`.toLowerCase();
        tables.push(table);
        return `postgres:${PG_URL}|${table}`;
      },
      open: async (spec) => {
        const bar = spec.lastIndexOf("|");
        const pool = new pg.Pool({ connectionString: spec.slice("postgres:".length, bar), max: 2 });
        const store = postgresStore(pool, { table: spec.slice(bar + 1) });
        const close = async () => {
          await store.close();
          await pool.end();
        };
        return { ...store, close };
      },
    },
    {
      name: "one Redis prefix",
      skip: redisFound.skip,
      spec: (test) => {
        const prefix = `{idemkey-x-${runId}-${test}}:`;
        prefixes.push(prefix);
        return `redis:${REDIS_URL}|${prefix}`;
      },
      open: async (spec) => {
        const bar = spec.lastIndexOf("|");
        const client = new Redis(spec.slice("redis:".length, bar));
        const store = redisStore(client, { prefix: spec.slice(bar + 1) });
        const close = async () => {
          await store.close();
          await client.quit();
        };
        return { ...store, close };
      },
    },
  ];
  async function cleanup() {
    if (tables.length > 0) {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      for (const table of tables) {
        await client.query(`DROP TABLE IF EXISTS "public"."${table}"`);
        await client.query(`DELETE FROM "public"."idemkey_meta" WHERE name = $1`, [table]);
      }
      await client.end();
    }
    if (prefixes.length > 0) {
      const client = new Redis(REDIS_URL);
      for (const prefix of prefixes) {
        const keys = await client.keys(`${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`);
        if (keys.length > 0) await client.del(...keys);
      }
      await client.quit();
    }
  }
  return { backends, cleanup };
}
