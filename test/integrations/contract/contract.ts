import { afterEach, describe, it, vi } from "vitest";
import type { Driver, Instance } from "./driver.js";
import { checks, type Run, scenarios } from "./scenarios.js";
import { ARGS, openWorld, type Seen, saysRefused } from "./world.js";

/**
 * Runs every row of the table through `driver`, once per effect the row names, each on its own world (a fresh
 * SQLite file, owner and clock). What the driver cannot express, and rows that need a capability it lacks, are
 * reported as skipped with the reason in the test's name: never a silent skip.
 */
export function testIntegration(driver: Driver): void {
  describe(`integration contract: ${driver.name}`, () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });
    for (const scenario of scenarios) {
      for (const effect of scenario.effects) {
        const name = `${scenario.id} (${effect}): ${scenario.rule}`;
        const cannot = driver.skip ?? driver.cannot?.[scenario.id];
        if (cannot !== undefined) {
          it.skip(`${name} [cannot: ${cannot}]`, () => {});
          continue;
        }
        if (scenario.needs !== undefined && driver[scenario.needs] === undefined) {
          it.skip(`${name} [not applicable: the framework does not list]`, () => {});
          continue;
        }
        it(name, { timeout: 30_000 }, async () => {
          // A throwing hook is reported as an IdemkeyWarning: expected here, and kept off stderr.
          vi.spyOn(process, "emitWarning").mockImplementation(() => {});
          const world = openWorld({
            name: "refund",
            effect,
            behaviour: scenario.behaviour,
            generatedDefault: scenario.generatedDefault ?? false,
            ...(scenario.unclassified === true ? {} : { noEffect: saysRefused }),
          });
          const instances: Instance[] = [];
          const run: Run = {
            world,
            driver,
            async open() {
              const instance = await driver.open(world);
              instances.push(instance);
              return instance;
            },
            call: (instance, options) => settle(instance, options),
            ...checks(world, driver),
          };
          try {
            await scenario.steps(run, effect);
          } finally {
            for (const instance of instances) await instance.close?.();
            await world.close();
          }
        });
      }
    }
  });
}

async function settle(instance: Instance, options?: { signal?: AbortSignal }): Promise<Seen> {
  try {
    return await instance.call(ARGS, options);
  } catch (error) {
    return { error, text: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
  }
}
