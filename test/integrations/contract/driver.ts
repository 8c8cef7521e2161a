import type { Seen, World } from "./world.js";

/** A scenario's id: the one name a driver declares it cannot express under. */
export type ScenarioId =
  | "fresh call"
  | "replay from a second instance"
  | "crash after the effect"
  | "refused with no effect, declared"
  | "error after the effect"
  | "error nobody classified"
  | "schema default"
  | "non-JSON result"
  | "abort while running"
  | "failing telemetry hook"
  | "endless listing"
  | "approval";

/** One process's adapter, built on `world.harness()` (or `world.store()`): the framework's entry point, called. */
export interface Instance {
  /** Calls the tool with `args` through the framework's real entry point; the caller hangs up on `signal`. */
  call(args: object, options?: { signal?: AbortSignal }): Promise<Seen>;
  close?(): Promise<void>;
}

/** A person's decision on a paused call, as the scenario gives it: the driver carries it the framework's way. */
export type Decision = { readonly approve: true } | { readonly approve: false; readonly reason: string };

/** A call its framework paused for a person's decision, before any effect. */
export interface Paused {
  /** The idempotency key the pause is bound to (the key the call will run under once approved). */
  readonly key: string;
  /** Gives the decision the framework's way and resumes the call: what the model (or the caller) saw then. */
  decide(decision: Decision): Promise<Seen>;
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
  /**
   * Calls the spec's tool, made to require approval the framework's way, with `args` in a new process on the world's
   * store: the framework pauses it for a decision (`Paused`), or, when the ledger has already decided (a replay, a
   * denial), answers at once (`Seen`).
   */
  askApproval?(world: World, args: object): Promise<Paused | Seen>;
}
