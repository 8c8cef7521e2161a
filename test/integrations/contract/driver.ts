import type { Seen, World } from "./world.js";

/** A scenario's id: the one name a driver declares it cannot express under. */
export type ScenarioId =
  | "fresh call"
  | "replay from a second instance"
  | "crash after the effect"
  | "refused with no effect, declared"
  | "error after the effect"
  | "schema default"
  | "non-JSON result"
  | "abort while running"
  | "failing telemetry hook"
  | "endless listing";

/** One process's adapter, built on `world.harness()` (or `world.store()`): the framework's entry point, called. */
export interface Instance {
  /** Calls the tool with `args` through the framework's real entry point; the caller hangs up on `signal`. */
  call(args: object, options?: { signal?: AbortSignal }): Promise<Seen>;
  close?(): Promise<void>;
}

/**
 * One adapter in the contract suite: how its framework builds the tool from `world.spec` and calls it. A driver
 * says what its framework cannot express (`cannot`, with the reason), and the suite reports each as skipped by name.
 */
export interface Driver {
  readonly name: string;
  /** Why the whole driver cannot run here (a Node-22-only framework on Node 20). */
  readonly skip?: string;
  /** Scenarios the framework cannot express, each with the reason. */
  readonly cannot?: Partial<Record<ScenarioId, string>>;
  /**
   * Why the adapter does not choose what the model reads (it returns a value to the application's own code): the
   * suite then checks the outcome by the error the caller gets instead of by the model's text.
   * @default the adapter shows the model its answer, and the model texts are checked
   */
  readonly notModelFacing?: string;
  open(world: World): Promise<Instance>;
  /** Lists an endless server's tools (a framework that lists): must fail, typed, naming the server. */
  listEndless?(): Promise<unknown>;
}
