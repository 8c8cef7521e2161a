import { afterEach, describe, expect, it, vi } from "vitest";
import { Behaviour } from "./owner.js";
import { LEASE_MS, openWorld, saysRefused, type ToolSpec, type World } from "./world.js";

/** One execution of a step as the engine schedules it: which run of the workflow, and which attempt. */
export interface Execution {
  /** The workflow run (a new run id: a workflow retry or reset; `continued`: a continue-as-new or cron run). */
  readonly run: string;
  readonly attempt: number;
}

/** What the engine saw of one execution: the step's value, or its failure and whether the engine would retry it. */
export type Executed = { readonly value: unknown } | { readonly error: unknown; readonly retryable: boolean };

/** One durable engine in the engines' table: runs the spec's tool as one step through the engine's adapter. */
export interface EngineDriver {
  readonly name: string;
  /** Why the whole driver cannot run here (its server is not reachable). */
  readonly skip?: string;
  readonly cannot?: Partial<Record<EngineScenario["id"], string>>;
  /** Executes the step once, in a new worker (`world.harness()`), as the engine would. */
  execute(world: World, execution: Execution): Promise<Executed>;
}

export interface EngineScenario {
  readonly id: "fresh" | "replay of the step" | "crash after the effect" | "final failure" | "run identity";
  readonly rule: string;
  readonly effect: ToolSpec["effect"];
  readonly behaviour: Behaviour;
  steps(world: World, execute: (execution: Execution) => Promise<Executed>): Promise<void>;
}

const value = (executed: Executed) => ("value" in executed ? executed.value : executed.error);

/** The engines' table: smaller than the adapters', for what an engine adds (its retries, its runs, its "final"). */
export const engineScenarios: readonly EngineScenario[] = [
  {
    id: "fresh",
    rule: "the step runs the tool once and returns its value",
    effect: "keyed",
    behaviour: Behaviour.succeed,
    async steps(world, execute) {
      expect(value(await execute({ run: "run-a", attempt: 1 }))).toEqual({ receipt: "r-1" });
      expect(world.owner.effects()).toBe(1);
    },
  },
  {
    id: "replay of the step",
    rule: "the step executed again (a replay, another worker) returns the recorded value without running",
    effect: "keyed",
    behaviour: Behaviour.succeed,
    async steps(world, execute) {
      await execute({ run: "run-a", attempt: 1 });
      expect(value(await execute({ run: "run-a", attempt: 2 }))).toEqual({ receipt: "r-1" });
      expect(world.owner.runs()).toBe(1);
    },
  },
  {
    id: "crash after the effect",
    rule: "a worker that died after the effect: the next attempt runs with the same key, and the owner dedupes",
    effect: "keyed",
    behaviour: Behaviour.succeed,
    async steps(world, execute) {
      world.faults.dropCompletion = true;
      await execute({ run: "run-a", attempt: 1 });
      world.faults.dropCompletion = false;
      world.clock.advance(2 * LEASE_MS);
      expect(value(await execute({ run: "run-a", attempt: 2 }))).toEqual({ receipt: "r-1" });
      expect(new Set(world.owner.keys()).size).toBe(1);
      expect(world.owner.effects()).toBe(1);
    },
  },
  {
    id: "final failure",
    rule: "an error the harness calls final (a keyed value JSON cannot hold) reaches the engine as non-retryable",
    effect: "keyed",
    behaviour: Behaviour.nonJson,
    async steps(world, execute) {
      const executed = await execute({ run: "run-a", attempt: 1 });
      expect("error" in executed, "the step fails").toBe(true);
      expect("error" in executed && executed.retryable, "the engine would not retry it").toBe(false);
      expect(world.owner.runs()).toBe(1);
    },
  },
  {
    id: "run identity",
    rule: "a continue-as-new run is a new run (a new key), while a retry of one run keeps its key",
    effect: "keyed",
    behaviour: Behaviour.succeed,
    async steps(world, execute) {
      await execute({ run: "month-1", attempt: 1 });
      await execute({ run: "month-1", attempt: 2 });
      await execute({ run: "month-2", attempt: 1 });
      expect(world.owner.effects(), "one charge per billed month").toBe(2);
    },
  },
];

/** Runs the engines' table through `driver`; what it cannot express is reported as skipped with the reason. */
export function testEngine(driver: EngineDriver): void {
  describe(`engine contract: ${driver.name}`, () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });
    for (const scenario of engineScenarios) {
      const name = `${scenario.id} (${scenario.effect}): ${scenario.rule}`;
      const cannot = driver.skip ?? driver.cannot?.[scenario.id];
      if (cannot !== undefined) {
        it.skip(`${name} [cannot: ${cannot}]`, () => {});
        continue;
      }
      it(name, { timeout: 30_000 }, async () => {
        vi.spyOn(process, "emitWarning").mockImplementation(() => {});
        const world = openWorld({
          name: "charge",
          effect: scenario.effect,
          behaviour: scenario.behaviour,
          generatedDefault: false,
          noEffect: saysRefused,
        });
        try {
          await scenario.steps(world, (execution) => driver.execute(world, execution));
        } finally {
          await world.close();
        }
      });
    }
  });
}
