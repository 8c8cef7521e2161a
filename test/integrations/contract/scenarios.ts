import { expect } from "vitest";
import { isOutcomeUnknownError } from "../../../src/errors/guards.js";
import type { OutcomeUnknownReason } from "../../../src/errors/outcome-unknown-error.js";
import { defaultModelTexts } from "../../../src/harness/model-texts.js";
import type { Driver, Instance, Paused, ScenarioId } from "./driver.js";
import { Behaviour, REFUSAL } from "./owner.js";
import { ARGS, LEASE_MS, type Seen, saysRefused, type ToolSpec, type World } from "./world.js";

/** What a scenario's steps get: the world, the driver, and the checks that depend on what the driver shows. */
export interface Run {
  world: World;
  driver: Driver;
  /** A new "process": the driver's adapter on a new harness over the same SQLite file. */
  open(): Promise<Instance>;
  /** Calls and always settles: a rejection becomes `{ error, text }`, as a caller that catches sees it. */
  call(instance: Instance, options?: { signal?: AbortSignal }): Promise<Seen>;
  /** The call's value came back (the owner's receipt is in what the model read). */
  expectValue(seen: Seen, receipt: string): void;
  /** The call was answered from the ledger and the model was told so. */
  expectReplayed(seen: Seen, receipt: string): void;
  /**
   * The call's outcome is unknown and the model was told not to retry it, and why (`reason`), truthfully: not
   * "interrupted" unless it was. `words`: the tool's own answer, which the model (or the error) must carry.
   */
  expectUnknown(seen: Seen, reason: OutcomeUnknownReason, words?: string): void;
}

/** One row of the table: the tool it calls, and the steps and observations that make the rule. */
export interface Scenario {
  readonly id: ScenarioId;
  /** What the contract says, in one line: the test's name. */
  readonly rule: string;
  readonly effects: readonly ToolSpec["effect"][];
  readonly behaviour: Behaviour;
  readonly generatedDefault?: boolean;
  /** The tool declares no `noEffect` classifier (the default): nobody vouches for any error. */
  readonly unclassified?: boolean;
  /** A driver capability the scenario needs besides `open`, reported as not applicable when absent. */
  readonly needs?: "listEndless";
  steps(run: Run, effect: ToolSpec["effect"]): Promise<void>;
}

/** The table: the one place a scenario is defined. Every driver runs every row. */
export const scenarios: readonly Scenario[] = [
  {
    id: "fresh call",
    rule: "runs the tool once and hands back its value",
    effects: ["keyed", "unguarded"],
    behaviour: Behaviour.succeed,
    async steps(run) {
      const seen = await run.call(await run.open());
      run.expectValue(seen, "r-1");
      expect(run.world.owner.effects()).toBe(1);
    },
  },
  {
    id: "replay from a second instance",
    rule: "a second instance on the same durable store replays the recorded value: no new effect, and the model is told it was already done",
    effects: ["keyed", "unguarded"],
    behaviour: Behaviour.succeed,
    async steps(run) {
      run.expectValue(await run.call(await run.open()), "r-1");
      const again = await run.call(await run.open());
      expect(run.world.owner.runs()).toBe(1);
      expect(run.world.owner.effects()).toBe(1);
      run.expectReplayed(again, "r-1");
    },
  },
  {
    id: "crash after the effect",
    rule: "after a crash between the effect and the ledger write: keyed runs again with the same key (the owner dedupes), unguarded is unknown",
    effects: ["keyed", "unguarded"],
    behaviour: Behaviour.succeed,
    async steps(run, effect) {
      const { world } = run;
      world.faults.dropCompletion = true;
      await run.call(await run.open());
      world.faults.dropCompletion = false;
      world.clock.advance(2 * LEASE_MS);
      const after = await run.call(await run.open());
      expect(world.owner.effects()).toBe(1);
      if (effect === "keyed") {
        expect(world.owner.runs()).toBe(2);
        expect(new Set(world.owner.keys()).size).toBe(1);
        run.expectValue(after, "r-1");
      } else {
        expect(world.owner.runs()).toBe(1);
        run.expectUnknown(after, "interrupted");
      }
    },
  },
  {
    id: "refused with no effect, declared",
    rule: "an error the tool declares as no effect releases the key: the identical call later runs, one effect in all",
    effects: ["unguarded"],
    behaviour: Behaviour.refuseFirst,
    async steps(run) {
      const instance = await run.open();
      const refused = await run.call(instance);
      expect(saysRefused(refused.error) || refused.text.includes(REFUSAL), "the refusal is handed back").toBe(
        true,
      );
      run.world.owner.accept();
      const later = await run.call(instance);
      run.expectValue(later, "r-1");
      expect(run.world.owner.effects()).toBe(1);
    },
  },
  {
    id: "error after the effect",
    rule: "an error after the effect with no classifier: unguarded is unknown and never runs again, keyed runs again only with the same key",
    effects: ["keyed", "unguarded"],
    behaviour: Behaviour.failAfterEffect,
    async steps(run, effect) {
      const { owner } = run.world;
      const first = await run.call(await run.open());
      expect(first.error !== undefined || !first.text.includes("r-1"), "the failure is not a value").toBe(
        true,
      );
      const again = await run.call(await run.open());
      expect(owner.effects()).toBe(1);
      if (effect === "keyed") {
        expect(owner.keys().every((key) => key !== null && key === owner.keys()[0])).toBe(true);
      } else {
        expect(owner.runs(), "an unguarded call that failed after its effect never runs again").toBe(1);
        run.expectUnknown(first, "unclassified_error", "connection reset after the payment was sent");
        run.expectUnknown(again, "unclassified_error", "connection reset after the payment was sent");
      }
    },
  },
  {
    id: "error nobody classified",
    rule: "an unguarded tool's first attempt answers an error nobody classified: the key stays on hold, and the model reads the tool's own words and why it is on hold, not that it was interrupted, on the first call and on a replay",
    effects: ["unguarded"],
    behaviour: Behaviour.refuseFirst,
    unclassified: true,
    async steps(run) {
      const { owner } = run.world;
      const first = await run.call(await run.open());
      run.expectUnknown(first, "unclassified_error", REFUSAL);
      owner.accept();
      const again = await run.call(await run.open());
      run.expectUnknown(again, "unclassified_error", REFUSAL);
      expect(owner.runs(), "a call on hold never runs again").toBe(1);
      expect(owner.effects()).toBe(0);
    },
  },
  {
    id: "schema default",
    rule: "a schema that generates a field per call does not change the key: a replay is the same call",
    effects: ["keyed"],
    behaviour: Behaviour.succeed,
    generatedDefault: true,
    async steps(run) {
      await run.call(await run.open());
      const again = await run.call(await run.open());
      expect(new Set(run.world.owner.keys()).size, "one key for the same call").toBe(1);
      expect(run.world.owner.effects()).toBe(1);
      run.expectReplayed(again, "r-1");
    },
  },
  {
    id: "non-JSON result",
    rule: "a keyed tool whose value JSON cannot hold ran once, and its key is final: a repeat does not run it again",
    effects: ["keyed"],
    behaviour: Behaviour.nonJson,
    async steps(run) {
      await run.call(await run.open());
      await run.call(await run.open());
      expect(run.world.owner.runs()).toBe(1);
      expect(run.world.owner.effects()).toBe(1);
    },
  },
  {
    id: "abort while running",
    rule: "the caller hangs up while the tool runs: the call settles, and a later call makes no second effect",
    effects: ["keyed", "unguarded"],
    behaviour: Behaviour.holdUntilAbort,
    async steps(run) {
      const { world } = run;
      const first = run.call(await run.open(), { signal: world.caller.signal });
      await world.owner.firstEffect;
      world.caller.abort(new Error("the user closed the chat"));
      await first;
      await run.call(await run.open());
      expect(world.owner.effects()).toBe(1);
    },
  },
  {
    id: "failing telemetry hook",
    rule: "a hook that throws is reported, never thrown into the call: the value still comes back",
    effects: ["keyed"],
    behaviour: Behaviour.succeed,
    async steps(run) {
      run.world.faults.throwingHook = true;
      const seen = await run.call(await run.open());
      run.expectValue(seen, "r-1");
      expect(run.world.owner.effects()).toBe(1);
    },
  },
  {
    id: "endless listing",
    rule: "listing a server that pages forever fails with a typed error naming the server",
    effects: ["keyed"],
    behaviour: Behaviour.succeed,
    needs: "listEndless",
    async steps(run) {
      const listing = run.driver.listEndless?.();
      await expect(listing).rejects.toThrow(/endless/);
      const error = await listing?.catch((e: unknown) => e);
      expect((error as Error).name).not.toBe("Error");
      expect((error as Error).name).not.toBe("TypeError");
    },
  },
  {
    id: "approval",
    rule: "a call that requires approval parks bound to its key; approving runs it once, a replay replays, a denied call never runs",
    effects: ["keyed"],
    behaviour: Behaviour.succeed,
    async steps(run) {
      const { world, driver } = run;
      const ask = driver.askApproval?.bind(driver);
      if (ask === undefined)
        throw new Error(`${driver.name} has no askApproval: declare the row cannot, with why`);
      const { owner } = world;

      const asked = paused(await ask(world, ARGS));
      expect(owner.runs(), "nothing runs before the decision").toBe(0);
      run.expectValue(await asked.decide({ approve: true }), "r-1");
      expect(owner.effects()).toBe(1);
      expect(owner.keys(), "the approved call runs under the key it was paused with").toEqual([asked.key]);

      // A framework that asks the person on every run (the OpenAI Agents SDK) asks again: approved, it replays.
      const asked2 = await ask(world, ARGS);
      const replay = "decide" in asked2 ? await asked2.decide({ approve: true }) : asked2;
      run.expectReplayed(replay, "r-1");
      expect(owner.runs()).toBe(1);

      const other = paused(await ask(world, { ...ARGS, cents: 500_000 }));
      expect(other.key, "another call is another decision").not.toBe(asked.key);
      const denied = await other.decide({ approve: false, reason: "not this one" });
      expect(denied.text, "a denied call has no value").not.toMatch(/r-\d/);
      await ask(world, { ...ARGS, cents: 500_000 });
      expect(owner.runs(), "a denied call never runs, even asked again").toBe(1);
      expect(owner.effects()).toBe(1);
    },
  },
];

function paused(answer: Paused | Seen): Paused {
  if (!("decide" in answer)) throw new Error(`the call was not paused for approval: ${answer.text}`);
  return answer;
}

/** The checks of what a call showed, for a driver that shows the model its answer or one that does not. */
export function checks(
  world: World,
  driver: Driver,
): Pick<Run, "expectValue" | "expectReplayed" | "expectUnknown"> {
  const context = () => ({ tool: world.spec.name, key: world.owner.keys()[0] ?? "" });
  return {
    expectValue(seen, receipt) {
      expect(seen.error, `no error: ${seen.text}`).toBeUndefined();
      expect(seen.text).toContain(receipt);
    },
    expectReplayed(seen, receipt) {
      expect(seen.error, `no error: ${seen.text}`).toBeUndefined();
      expect(seen.text).toContain(receipt);
      if (driver.notModelFacing === undefined)
        expect(seen.text).toContain(defaultModelTexts.replayed(context()));
    },
    expectUnknown(seen, reason, words) {
      expect(seen.text, "an unknown outcome is not a value").not.toContain("r-1");
      if (driver.notModelFacing === undefined) {
        expect(seen.text).toContain(defaultModelTexts.outcomeUnknown({ ...context(), reason }));
        if (words !== undefined) expect(seen.text, "the model reads the tool's own words").toContain(words);
        if (reason === "interrupted") expect(seen.text).toMatch(/interrupted/);
        else expect(seen.text, "nothing was interrupted").not.toMatch(/interrupted/);
      } else {
        expect((seen.error as Error).name).toBe("OutcomeUnknownError");
        // A harness's own error says why; an owner's refusal (a wire answer) is checked by its name only.
        if (isOutcomeUnknownError(seen.error)) {
          expect(seen.error.reason).toBe(reason);
          if (words !== undefined) expect(seen.error.answer).toContain(words);
        }
      }
    },
  };
}
