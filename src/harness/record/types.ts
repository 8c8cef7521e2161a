import type { Effect, LedgerEvent } from "../types.js";
import type { LedgerArgs } from "./args.js";

/**
 * The formats a ledger record's `data` is written in. Every idemkey from 0.2 reads both; a process writes the one
 * its `ledgerVersion` option names (docs/ledger-format.md).
 */
export type LedgerVersion = 1 | 2;

/** The call a ledger record stands for, as read from either format: what the harness works with. */
export interface LedgerCall {
  taskId: string;
  tool: string;
  effect: Effect;
  step?: string | number;
  argsHash: string;
  /** The full arguments, whatever form the format stored them in. */
  args: LedgerArgs;
  events: LedgerEvent[];
  /** Members a newer writer added that this version does not know: written back as they were, so none is lost. */
  extra?: Record<string, unknown>;
}

/**
 * The JSON in a ledger record's `data`, version 1 (the format of idemkey 0.1, and the default writer). New fields may
 * be added, existing ones keep their meaning.
 * - `taskId`, `tool`, `effect`, `step`: what the call was.
 * - `argsHash`: SHA-256 hex of `args`; a later call with the same key whose arguments hash differently is the same
 *   call by its identity and replays this one (its `replayed` event says `argsDiffer: true`).
 * - `args`: the canonical JSON text of the full arguments, run again as they are on a takeover.
 * - `events`: the audit trail of state changes (approvals, denials, resolutions, unknown outcomes), with who and when.
 */
export interface LedgerData {
  v: 1;
  taskId: string;
  tool: string;
  effect: Effect;
  step?: string | number;
  argsHash: string;
  args: string;
  events: LedgerEvent[];
}

/**
 * The JSON in a ledger record's `data`, version 2: version 1 with `args` as the arguments' canonical JSON itself
 * instead of a string holding it. Smaller (no quote escaped twice), and a database's JSON functions reach into it
 * (`json_extract(data, '$.args.repo')`). Written with `ledgerVersion: 2`, once every process of the fleet reads it.
 */
export interface LedgerDataV2 extends Omit<LedgerData, "v" | "args"> {
  v: 2;
  /** The full arguments, written in their canonical form (RFC 8785), last in the record. */
  args: unknown;
}
