import { describe, expect, it } from "vitest";
import {
  ApprovalDeniedError,
  CanonicalizationError,
  createHarness,
  defaultModelTexts,
  defineTool,
  ErrorAnswer,
  IdempotencyConflictError,
  isErrorAnswer,
  isFinal,
  isOutcomeUnknownError,
  memoryStore,
  OutcomeUnknownError,
  StoreError,
  ToolCallError,
  WaitTimeoutError,
} from "../../src/index.js";
import { fakeOwner } from "./support.js";

/** A payments API that declines while the account is short, and charges (one effect) once it is not. */
class CardDeclinedError extends Error {
  override name = "CardDeclinedError";
}

describe("the one rule: an error means no effect only when someone who knows says so", () => {
  it("an unguarded failure nobody vouches for is an unknown outcome, never repeated", async () => {
    const owner = fakeOwner();
    const send = defineTool({
      name: "sendEmail",
      effect: "unguarded",
      run: (args: { to: string }, ctx) => {
        owner.unguarded(ctx.idempotencyKey, args);
        throw new Error("connection reset after the mail was queued");
      },
    });
    const harness = createHarness({ retry: { retries: 3, minDelayMs: 0 } });
    await expect(harness.call("t", send, { to: "ana" })).rejects.toBeInstanceOf(OutcomeUnknownError);
    await expect(harness.call("t", send, { to: "ana" })).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(owner.effects).toHaveLength(1);
  });

  it("the tool's declared classifier releases the refused payment, and the identical call later runs once", async () => {
    const owner = fakeOwner();
    let funds = 0;
    const charge = defineTool({
      name: "charge",
      effect: "unguarded",
      noEffect: (error) => error instanceof CardDeclinedError,
      run: (args: { cents: number }, ctx) => {
        if (funds < args.cents) throw new CardDeclinedError("insufficient funds");
        return owner.unguarded(ctx.idempotencyKey, args);
      },
    });
    const store = memoryStore();
    const harness = createHarness({ store, retry: { retries: 0 } });
    await expect(harness.call("t", charge, { cents: 500 })).rejects.toBeInstanceOf(CardDeclinedError);
    expect(await store.list()).toEqual([]);
    funds = 1000;
    expect(await harness.call("t", charge, { cents: 500 })).toEqual({ id: 1 });
    expect(await harness.call("t", charge, { cents: 500 })).toEqual({ id: 1 });
    expect(owner.effects).toHaveLength(1);
  });

  it("a classifier that throws or answers other than true cannot tell: the outcome stays unknown", async () => {
    for (const noEffect of [
      () => {
        throw new Error("classifier bug");
      },
      () => undefined,
      () => false,
    ]) {
      const tool = defineTool({
        name: "t",
        effect: "unguarded",
        noEffect,
        run: () => {
          throw new Error("boom");
        },
      });
      const harness = createHarness({ retry: { retries: 0 } });
      await expect(harness.call("t", tool, {})).rejects.toBeInstanceOf(OutcomeUnknownError);
    }
  });

  it("an error answer that someone who knows marked no-effect is handed back and releases the key", async () => {
    const answer = { isError: true, text: "insufficient funds" };
    let runs = 0;
    const tool = defineTool({
      name: "pay",
      effect: "unguarded",
      run: () => {
        runs++;
        throw new ErrorAnswer(answer, { tool: "pay", text: answer.text, noEffect: true });
      },
    });
    const store = memoryStore();
    const harness = createHarness({ store, retry: { retries: 3, minDelayMs: 0 } });
    const error = await harness.call("t", tool, {}).catch((e: unknown) => e);
    expect(isErrorAnswer(error)).toBe(true);
    expect((error as ErrorAnswer).answer).toBe(answer);
    // Not retried within the call: the model reads the answer and decides.
    expect(runs).toBe(1);
    expect(await store.list()).toEqual([]);
  });

  it("an unguarded error answer nobody vouches for is unknown; the classifier sees the answer", async () => {
    const tool = (noEffect?: (e: unknown) => boolean | undefined) =>
      defineTool({
        name: "email",
        effect: "unguarded",
        ...(noEffect ? { noEffect } : {}),
        run: () => {
          throw new ErrorAnswer(
            { status: "error", content: "smtp 451" },
            { tool: "email", text: "smtp 451" },
          );
        },
      });
    const harness = createHarness({ retry: { retries: 0 } });
    const unknown = await harness.call("t", tool(), {}).catch((e: unknown) => e);
    expect(isOutcomeUnknownError(unknown)).toBe(true);
    expect(isErrorAnswer((unknown as Error).cause)).toBe(true);

    const classified = tool(
      (e) => isErrorAnswer(e) && (e.answer as { content: string }).content === "smtp 451",
    );
    await expect(createHarness().call("t", classified, {})).rejects.toBeInstanceOf(ErrorAnswer);
  });

  it("a keyed error answer releases the key (the owner dedupes on it) without a retry", async () => {
    let runs = 0;
    const tool = defineTool({
      name: "open",
      effect: "keyed",
      run: () => {
        runs++;
        throw new ErrorAnswer("refused", { tool: "open", text: "refused" });
      },
    });
    const store = memoryStore();
    const harness = createHarness({ store, retry: { retries: 3, minDelayMs: 0 } });
    await expect(harness.call("t", tool, {})).rejects.toBeInstanceOf(ErrorAnswer);
    expect(runs).toBe(1);
    expect(await store.list()).toEqual([]);
  });

  it("defineTool refuses a noEffect that is not a function, naming the tool", () => {
    expect(() =>
      defineTool({ name: "x", effect: "keyed", noEffect: true as never, run: () => null }),
    ).toThrow(/tool.noEffect of "x" must be a function/);
  });
});

describe("isFinal: what no retry of the same call can fix", () => {
  it("is true for the errors that say so and for bugs, false for transient failures", () => {
    expect(isFinal(new OutcomeUnknownError({ key: "k", tool: "t", why: "w" }))).toBe(true);
    expect(isFinal(new ApprovalDeniedError("k", "no", undefined))).toBe(true);
    expect(isFinal(new CanonicalizationError("$.result", "a BigInt"))).toBe(true);
    expect(isFinal(new IdempotencyConflictError({ key: "k", by: "mcp", tool: "t", detail: "d" }))).toBe(true);
    expect(isFinal(new ErrorAnswer(null, { tool: "t", text: "x" }))).toBe(true);
    expect(isFinal(new TypeError("bad"))).toBe(true);
    expect(isFinal(new ToolCallError("nope", { retryable: false }))).toBe(true);
    expect(isFinal(Object.assign(new TypeError("flaky"), { retryable: true }))).toBe(false);
    expect(isFinal(new Error("ECONNRESET"))).toBe(false);
    expect(isFinal(new WaitTimeoutError("k", "pending", 10))).toBe(false);
    expect(isFinal(new StoreError({ store: "s", operation: "claim", key: "k", cause: new Error("x") }))).toBe(
      false,
    );
  });
});

describe("callWithOutcome: whether the tool ran for this call", () => {
  it("says replayed for a recorded result and for the same call shared in process, not for a fresh run", async () => {
    const owner = fakeOwner();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const tool = defineTool({
      name: "open",
      effect: "keyed",
      run: async (args: { n: number }, ctx) => {
        await gate;
        return owner.keyed(ctx.idempotencyKey, args);
      },
    });
    const harness = createHarness();
    const first = harness.callWithOutcome("t", tool, { n: 1 });
    const twin = harness.callWithOutcome("t", tool, { n: 1 });
    open();
    expect(await first).toEqual({ value: { id: 1 }, replayed: false });
    expect(await twin).toEqual({ value: { id: 1 }, replayed: true });
    expect(await harness.callWithOutcome("t", tool, { n: 1 })).toEqual({ value: { id: 1 }, replayed: true });
    expect(await harness.callWithOutcome("t", tool, { n: 2 })).toEqual({ value: { id: 2 }, replayed: false });
    expect(owner.effects).toHaveLength(2);
  });

  it("says replayed for a call that waited on the same call running in another harness", async () => {
    const store = memoryStore();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let runs = 0;
    const tool = defineTool({
      name: "slow",
      effect: "keyed",
      run: async () => {
        runs++;
        await gate;
        return "done";
      },
    });
    const a = createHarness({ store });
    const b = createHarness({ store, wait: { minDelayMs: 1, maxDelayMs: 5 } });
    const running = a.callWithOutcome("t", tool, {});
    while (runs === 0) await new Promise((resolve) => setImmediate(resolve));
    const waiting = b.callWithOutcome("t", tool, {});
    open();
    expect(await running).toEqual({ value: "done", replayed: false });
    expect(await waiting).toEqual({ value: "done", replayed: true });
    expect(runs).toBe(1);
  });
});

describe("modelTexts", () => {
  it("defaults to texts that name the tool, say what was done and what not to do", () => {
    const harness = createHarness();
    expect(harness.modelTexts).toBe(defaultModelTexts);
    const replayed = harness.modelTexts.replayed({ tool: "refund", key: "k1" });
    expect(replayed).toContain('"refund"');
    expect(replayed).toMatch(/already done/);
    expect(replayed).toMatch(/Do not repeat it/);
    const unknown = harness.modelTexts.outcomeUnknown({ tool: "refund", key: "k1" });
    expect(unknown).toMatch(/may or may not have taken effect/);
    expect(unknown).toMatch(/Do not retry it/);
    expect(unknown).toContain("k1");
  });

  it("says truthfully why a call is on hold, and carries the tool's own answer after the instructions", () => {
    const context = { tool: "pay", key: "k1" };
    const interrupted = defaultModelTexts.outcomeUnknown({ ...context, reason: "interrupted" });
    expect(interrupted).toMatch(/interrupted/);
    expect(defaultModelTexts.outcomeUnknown(context), "no reason reads as interrupted, as before").toBe(
      interrupted,
    );
    const declined = defaultModelTexts.outcomeUnknown({
      ...context,
      reason: "unclassified_error",
      answer: "insufficient funds",
    });
    expect(declined).toMatch(/answered it with an error/);
    expect(declined).not.toMatch(/interrupted/);
    expect(declined).toMatch(/Do not retry it/);
    expect(declined.endsWith("insufficient funds")).toBe(true);
    for (const reason of ["unrecordable_result", "owner_unknown", "expired"] as const) {
      const text = defaultModelTexts.outcomeUnknown({ ...context, reason });
      expect(text, reason).not.toMatch(/interrupted|undefined/);
      expect(text, reason).toContain("k1");
    }
  });

  it("takes the user's texts, one at a time, and refuses what is not a function", () => {
    const harness = createHarness({ modelTexts: { replayed: ({ tool }) => `${tool}: done before.` } });
    expect(harness.modelTexts.replayed({ tool: "refund", key: "k" })).toBe("refund: done before.");
    expect(harness.modelTexts.outcomeUnknown({ tool: "refund", key: "k" })).toBe(
      defaultModelTexts.outcomeUnknown({ tool: "refund", key: "k" }),
    );
    expect(() => createHarness({ modelTexts: { replayed: "done" as never } })).toThrow(
      /options.modelTexts.replayed must be a function/,
    );
    expect(() => createHarness({ modelTexts: 3 as never })).toThrow(/options.modelTexts must be an object/);
  });
});
