import type { Effect } from "../../src/index.js";
import type { Task } from "../schedule.js";

/** One effect as the owner recorded it: what it counts as (`group`), and the demo trace of the request. */
export interface EffectRow {
  readonly group: string;
  /** `<copy><run>.<call>.<attempt>` from the `x-demo-trace` header; `null` when the request had none. */
  readonly trace: string | null;
}

/** A running owner of side effects, with its own record of what it did. */
export interface Owner {
  readonly name: string;
  /** The agent's tool that reaches this owner. */
  readonly tool: string;
  readonly effect: Effect;
  readonly url: string;
  /** How many effects each group should end up with when every task ran once. */
  expected(tasks: readonly Task[]): Map<string, number>;
  /** Every effect the owner took, oldest first, read from its own database. */
  effects(): EffectRow[];
  /** How many POST requests reached the owner, faults included, and how many it answered from a saved response. */
  requests(): { attempts: number; replays: number };
  close(): Promise<void>;
}
