import { describe, expect, it } from "vitest";
import * as here from "../../src/errors/index.js";
import {
  CanonicalizationError,
  createHarness,
  defineTool,
  IdempotencyConflictError,
  isCanonicalizationError,
  isIdemkeyError,
  isIdempotencyConflictError,
  isStoreError,
  memoryStore,
  StoreError,
} from "../../src/index.js";
import { fakeTime } from "../harness/support.js";
import { errorsInAnotherRealm } from "./support.js";

const there = await errorsInAnotherRealm();

/** One instance of every class, made by `lib` (this realm's module or the other realm's). */
function samples(lib: typeof here) {
  return {
    ApprovalDeniedError: new lib.ApprovalDeniedError("k", "too much", "ops"),
    CanonicalizationError: new lib.CanonicalizationError("$.x", "NaN is not JSON"),
    HttpStatusError: new lib.HttpStatusError(new Response("no", { status: 400 }), "no", {
      retryable: false,
      noEffect: true,
      replayed: false,
    }),
    IdemkeyError: new lib.IdemkeyError("base"),
    IdempotencyConflictError: new lib.IdempotencyConflictError({ key: "k" }),
    LeaseLostError: new lib.LeaseLostError("k"),
    LedgerStateError: new lib.LedgerStateError({
      key: "k",
      state: undefined,
      reason: "wrong-state",
      action: "approve",
      expected: "awaiting_approval",
    }),
    MissingPeerError: new lib.MissingPeerError("idemkey/sqlite", "better-sqlite3", "^12"),
    NetworkError: new lib.NetworkError({ code: "ECONNREFUSED", noEffect: true }),
    OutcomeUnknownError: new lib.OutcomeUnknownError({ key: "k", tool: "pay", why: "it timed out" }),
    ResponseTooLargeError: new lib.ResponseTooLargeError("k", 200, 10),
    SchemaVersionError: new lib.SchemaVersionError("t", 9, 1),
    StoreConfigError: new lib.StoreConfigError({
      store: "redis",
      option: "prefix",
      value: "p:",
      reply: "CROSSSLOT",
    }),
    StoreError: new lib.StoreError({
      store: "postgres",
      operation: "get",
      key: "k",
      cause: new Error("down"),
    }),
    StoreLayoutError: new lib.StoreLayoutError({ store: "redis", location: "p:", found: 1, supported: 2 }),
    ToolCallError: new lib.ToolCallError("busy", { retryAfterMs: 5 }),
    WaitTimeoutError: new lib.WaitTimeoutError("k", "pending", 100),
  } as const;
}

const guardOf = (name: string) => (here as unknown as Record<string, (x: unknown) => boolean>)[`is${name}`]!;

describe("type guards", () => {
  it("there is one guard per class of the family, and isIdemkeyError for the base", () => {
    const classes = Object.keys(here).filter(
      (name) => /Error$/.test(name) && typeof guardOf(name) === "function",
    );
    expect(classes.sort()).toEqual(Object.keys(samples(here)).sort());
  });

  for (const [realm, lib] of [
    ["this realm", here],
    ["another realm (node:vm)", there],
  ] as const) {
    it(`recognise each class made in ${realm}, and no other class`, () => {
      const made = samples(lib as typeof here);
      for (const [name, error] of Object.entries(made)) {
        expect(isIdemkeyError(error), name).toBe(true);
        for (const other of Object.keys(made)) {
          if (other === "IdemkeyError") continue;
          expect(guardOf(other)(error), `is${other}(${name})`).toBe(other === name);
        }
      }
    });
  }

  it("an error from the other realm fails instanceof here, which is why the guards read a mark", () => {
    const foreign = new there.StoreError({ store: "redis", operation: "get", key: "k", cause: "down" });
    expect(foreign instanceof StoreError).toBe(false);
    expect(foreign instanceof Error).toBe(false);
    expect(isStoreError(foreign)).toBe(true);
    expect(foreign.store).toBe("redis");
  });

  it("recognise a subclass by the classes it extends", () => {
    class DynamoStoreError extends StoreError {
      override name = "DynamoStoreError" as unknown as "StoreError";
    }
    const error = new DynamoStoreError({
      store: "dynamodb",
      operation: "claim",
      key: "k",
      cause: new Error("x"),
    });
    expect(isStoreError(error)).toBe(true);
    expect(isIdemkeyError(error)).toBe(true);
  });

  it("refuse look-alikes: a plain error with the same name, or an object that copies the fields", () => {
    const lookAlike = Object.assign(new Error("x"), { name: "StoreError", store: "redis", retryable: true });
    expect(isStoreError(lookAlike)).toBe(false);
    expect(isIdemkeyError(lookAlike)).toBe(false);
    expect(isIdemkeyError({ ...new StoreError({ store: "r", operation: "get", cause: 1 }) })).toBe(false);
    for (const value of [null, undefined, 0, "StoreError", Symbol.for("idemkey.error")]) {
      expect(isIdemkeyError(value)).toBe(false);
    }
  });
});

describe("the harness's default retry policy across realms", () => {
  it.each([
    ["a CanonicalizationError", () => new there.CanonicalizationError("$.x", "NaN is not JSON")],
    ["an IdempotencyConflictError", () => new there.IdempotencyConflictError({ key: "k" })],
  ])("does not retry %s made by another copy of idemkey", async (_, make) => {
    const time = fakeTime();
    let attempts = 0;
    const error = make();
    const tool = defineTool({
      name: "foreign",
      effect: "keyed",
      run: () => {
        attempts++;
        throw error;
      },
    });
    const harness = createHarness({
      store: memoryStore({ clock: time.clock }),
      clock: time.clock,
      sleep: time.sleep,
      retry: { minDelayMs: 1 },
    });
    await expect(time.run(harness.call("t", tool, {}))).rejects.toBe(error);
    expect(attempts).toBe(1);
    expect(isCanonicalizationError(error) || isIdempotencyConflictError(error)).toBe(true);
    expect(error instanceof CanonicalizationError || error instanceof IdempotencyConflictError).toBe(false);
  });
});
