import { describe, expect, expectTypeOf, it } from "vitest";
import {
  callTool as dbosCallTool,
  retryUnlessFinal,
  retryUnlessOutcomeUnknown,
  runStep,
} from "../../src/dbos/index.js";
import { CanonicalizationError, createHarness, defineTool, Effect } from "../../src/index.js";
import { run as inngestRun } from "../../src/inngest/index.js";
import { run as restateRun } from "../../src/restate/index.js";
import { callTool as temporalCallTool } from "../../src/temporal/index.js";
import { callTool as workflowCallTool } from "../../src/workflow/index.js";

const harness = createHarness();
const tool = defineTool({ name: "t", effect: Effect.keyed, run: () => null });
const stepCtx = {
  event: { id: "evt-1" },
  step: { run: async (_id: string, fn: () => Promise<unknown>) => fn() },
};

describe("the engine adapters refuse bad input with a TypeError naming it", () => {
  it("every adapter: a harness that is not one, a tool not made by defineTool", async () => {
    const calls: ((h: unknown, t: unknown) => Promise<unknown>)[] = [
      (h, t) => dbosCallTool(h as never, t as never, {}),
      (h, t) => temporalCallTool(h as never, t as never, {}),
      (h, t) => workflowCallTool(h as never, t as never, {}),
      (h, t) => inngestRun(stepCtx, h as never, t as never, {}),
    ];
    for (const call of calls) {
      await expect(call({}, tool)).rejects.toThrow(/harness must be a harness made by createHarness/);
      await expect(call(harness, { name: "t", run: () => null })).rejects.toThrow(
        /tool must be a tool made by defineTool/,
      );
    }
    expect(() => runStep({} as never, tool, {})).toThrow(/harness must be/);
    expect(() => restateRun({} as never, harness, tool, {})).toThrow(/ctx must be the Restate context/);
  });

  it("idemkey/inngest: options.id, options.taskId and what taskId returns", async () => {
    await expect(inngestRun(stepCtx, harness, tool, {}, { id: "" })).rejects.toThrow(/options\.id must be/);
    await expect(inngestRun(stepCtx, harness, tool, {}, { taskId: "x" as never })).rejects.toThrow(
      /options\.taskId must be a function/,
    );
    await expect(inngestRun(stepCtx, harness, tool, {}, { taskId: () => "" })).rejects.toThrow(
      /options\.taskId must return/,
    );
    await expect(inngestRun({} as never, harness, tool, {})).rejects.toThrow(/ctx must be the context/);
  });

  it("idemkey/dbos: retryUnlessOutcomeUnknown refuses a shouldRetry that is not a function, and keeps the user's", async () => {
    expect(() => retryUnlessOutcomeUnknown("no" as never)).toThrow(/shouldRetry must be a function/);
    const decide = retryUnlessOutcomeUnknown((error) => (error as Error).message !== "stop");
    expect(await decide(new Error("go"))).toBe(true);
    expect(await decide(new Error("stop"))).toBe(false);
    expect(
      await decide(Object.assign(new Error("x"), { name: "OutcomeUnknownError", retryable: false })),
    ).toBe(false);
  });

  it("idemkey/dbos: retryUnlessFinal stops on every final failure and retries a lost reply", async () => {
    const decide = retryUnlessFinal();
    expect(await decide(new TypeError("bad argument"))).toBe(false);
    expect(await decide(new CanonicalizationError("$.result", "a BigInt is not a JSON number"))).toBe(false);
    const socket = Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" });
    expect(await decide(new TypeError("fetch failed", { cause: socket }))).toBe(true);
    expect(await decide(Object.assign(new Error("422"), { retryable: false }))).toBe(false);
    expect(retryUnlessOutcomeUnknown).toBe(retryUnlessFinal);
  });

  it("outside their engine, callTool says where it must run", async () => {
    await expect(workflowCallTool(harness, tool, {})).rejects.toThrow(/inside a "use step" function/);
    await expect(temporalCallTool(harness, tool, {})).rejects.toThrow(/inside a Temporal activity/);
    await expect(dbosCallTool(harness, tool, {})).rejects.toThrow(/inside a DBOS step/);
  });
});

describe("the adapters' types", () => {
  it("each returns the tool's result type, and takes the tool's argument type", () => {
    const receipt = defineTool({
      name: "charge",
      effect: Effect.keyed,
      run: (args: { amount: number }) => ({ id: "ch_1", amount: args.amount }),
    });
    type Receipt = { id: string; amount: number };
    // Type-level only: none of these runs.
    const calls = () => {
      expectTypeOf(runStep(harness, receipt, { amount: 1 })).toEqualTypeOf<Promise<Receipt>>();
      expectTypeOf(dbosCallTool(harness, receipt, { amount: 1 })).toEqualTypeOf<Promise<Receipt>>();
      expectTypeOf(temporalCallTool(harness, receipt, { amount: 1 })).toEqualTypeOf<Promise<Receipt>>();
      expectTypeOf(workflowCallTool(harness, receipt, { amount: 1 })).toEqualTypeOf<Promise<Receipt>>();
      expectTypeOf(inngestRun(stepCtx, harness, receipt, { amount: 1 })).toEqualTypeOf<Promise<Receipt>>();
      expectTypeOf(
        restateRun({} as never, harness, receipt, { amount: 1 }),
      ).resolves.toEqualTypeOf<Receipt>();
      // @ts-expect-error the tool takes { amount: number }
      void runStep(harness, receipt, { amount: "1" });
    };
    expect(typeof calls).toBe("function");
  });
});
