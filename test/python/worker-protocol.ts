import type { Effect } from "../../src/index.js";

// What a cross-language worker (python/tests/worker.py, fixtures/worker.ts) is given and says back: one definition
// for the tests and the TypeScript worker. Types and one constant only: the worker runs as a child process (tsx, Bun
// or Deno), and this file must load there without the tests' helpers.

/** The arguments every worker's call carries. */
export const ARGS = { service: "api", version: 3 };

export type Lang = "python" | "ts";
export type Call = { task: string; effect: Effect };
/** A worker's one argument, read the same way by both workers (python/tests/worker.py's docstring). */
export type Config = {
  store: string;
  owner: string;
  calls: Call[];
  leaseMs?: number;
  hang?: boolean;
  /** Only the n-th tool run of the process hangs. */
  hangAt?: number;
  ready?: boolean;
  /** The longest pause inside a tool, between its start and its effect. @default 20 */
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
