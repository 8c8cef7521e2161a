import { describe, expect, it } from "vitest";
import {
  IdempotencyConflictError,
  LedgerStateError,
  NetworkError,
  OutcomeUnknownError,
  StoreConfigError,
  StoreError,
  StoreLayoutError,
} from "../../src/index.js";

// Each class writes its message from data. The texts are the ones the call sites wrote by hand before, word for
// word, so that what users read (and what they may match on) does not change with the convention.

describe("StoreError", () => {
  const cause = new Error("terminating connection due to administrator command");

  it("a failed server: names the store, the operation, the key, what the driver said and who to wait for", () => {
    const error = new StoreError({
      store: "postgres",
      operation: "update",
      key: "k",
      cause,
      server: "PostgreSQL",
    });
    expect(error.message).toBe(
      'postgres store: update of key "k" failed: terminating connection due to administrator command. ' +
        "It may or may not have been applied; calling again is safe once PostgreSQL answers.",
    );
    expect(error).toMatchObject({ store: "postgres", operation: "update", key: "k", retryable: true, cause });
  });

  it("a failed server with no key and the driver's words given", () => {
    const error = new StoreError({
      store: "redis",
      operation: "list",
      cause,
      detail: "TimeoutError with no message",
    });
    expect(error.message).toBe(
      "redis store: list failed: TimeoutError with no message. It may or may not have been applied; calling again " +
        "is safe once redis answers.",
    );
    expect(error.key).toBeUndefined();
  });

  it("driver's words that end a sentence themselves (ioredis's maxRetriesPerRequest) are not given a second period", () => {
    const words =
      'Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.';
    const error = new StoreError({
      store: "redis",
      operation: "list",
      cause: new Error(words),
      server: "Redis",
    });
    expect(error.message).toBe(
      `redis store: list failed: ${words} It may or may not have been applied; calling again is safe once Redis ` +
        "answers.",
    );
    expect(error.message).not.toContain("..");
  });

  it("contention, a connection lost in a transaction, and an outcome that could not be saved", () => {
    expect(
      new StoreError({ store: "postgres", operation: "claim", key: "k", reason: "contention" }).message,
    ).toBe('postgres store: claim of key "k" kept losing races with concurrent deletes; try again');
    const lost = new StoreError({
      store: "postgres",
      operation: "effectOnce",
      key: "k",
      reason: "connection-lost",
      during: "while the effect ran; nothing was committed",
      server: "PostgreSQL",
      cause,
    });
    expect(lost.message).toBe(
      "effectOnce: the connection to PostgreSQL failed while the effect ran; nothing was committed. Call again " +
        "with the same key: it replays the saved result if the effect committed and runs it if not. " +
        "(terminating connection due to administrator command)",
    );
    const unsaved = new StoreError({
      store: "redis",
      operation: "complete",
      key: "k",
      reason: "outcome-unsaved",
      tool: "pay",
      attempt: 2,
      detail: "Error: down",
      cause,
    });
    expect(unsaved.message).toBe(
      'The tool "pay" ran (attempt 2), but its outcome could not be recorded before the save budget ran out; the ' +
        "key stays locked until its lease lapses. Cause: Error: down",
    );
  });

  it("has no cause property when given none, as before", () => {
    expect("cause" in new StoreError({ store: "s", operation: "claim", reason: "contention" })).toBe(false);
  });

  it("keeps the deprecated positional form (store authors call it): the message is the caller's", () => {
    const error = new StoreError("flaky", "get", "k", "flaky store: get failed", { cause });
    expect(error).toMatchObject({
      store: "flaky",
      operation: "get",
      key: "k",
      message: "flaky store: get failed",
    });
    expect(error.cause).toBe(cause);
  });
});

describe("StoreLayoutError", () => {
  it("composes the same message from data as from the deprecated positional form", () => {
    const cause = new Error("WRONGTYPE");
    const data = new StoreLayoutError({ store: "redis", location: "app:", found: 1, supported: 2, cause });
    const positional = new StoreLayoutError("redis", "app:", 1, 2, { cause });
    expect(data.message).toBe(positional.message);
    expect(data.message).toMatch(/^redis store at "app:" holds an older idemkey's records \(layout 1\)/);
    expect(data).toMatchObject({ store: "redis", location: "app:", found: 1, supported: 2, cause });
    expect(new StoreLayoutError({ store: "redis", location: "p", found: 3, supported: 2 }).message).toMatch(
      /records of layout 3, newer than the layout 2/,
    );
  });
});

describe("IdempotencyConflictError", () => {
  it("composes the message for each owner that can find a key reused", () => {
    expect(new IdempotencyConflictError({ key: "k" }).message).toBe(
      'key "k" was already used with another fingerprint: the request differs from the one first made with this ' +
        "key; use a new key for a new request",
    );
    expect(
      new IdempotencyConflictError({ key: "k", by: "http", url: "https://pay.test/charges" }).message,
    ).toBe(
      "https://pay.test/charges answered 422: this Idempotency-Key was already used for a different request. " +
        "Retrying cannot help; call with the arguments that were meant, or a new key (another step).",
    );
    expect(new IdempotencyConflictError({ key: "k", by: "http", url: "" }).message).toMatch(
      /^The owner answered 422/,
    );
    expect(
      new IdempotencyConflictError({ key: "k", by: "mcp", tool: "pay", detail: "key reused" }).message,
    ).toBe('The MCP tool "pay" refused the call: key reused');
    expect(
      new IdempotencyConflictError({ key: "k", by: "a2a", tool: "book", detail: "key reused" }).message,
    ).toBe('The A2A agent behind "book" refused the message: key reused');
  });

  it("keeps the deprecated (key, message) form", () => {
    const error = new IdempotencyConflictError("k", "conflict", { cause: 1 });
    expect(error).toMatchObject({ key: "k", message: "conflict", cause: 1, retryable: false });
  });
});

describe("OutcomeUnknownError", () => {
  it("says what to do next, for the harness, an MCP tool and an HTTP takeover", () => {
    expect(new OutcomeUnknownError({ key: "k1", tool: "pay", why: "its process stopped" }).message).toBe(
      'The outcome of the unguarded tool "pay" is unknown: its process stopped. Check whether it took effect, then ' +
        'call harness.resolve("k1", { result }) or harness.resolve("k1", { retry: true })',
    );
    expect(
      new OutcomeUnknownError({ key: "k", by: "mcp", tool: "pay", detail: "it may have run." }).message,
    ).toBe(
      'The MCP tool "pay" refused the call: it may have run. Check whether it took effect, then resolve the key.',
    );
    expect(
      new OutcomeUnknownError({ key: "k", by: "a2a", tool: "book", detail: "it may have run." }).message,
    ).toBe(
      'The A2A agent behind "book" refused the message: it may have run. Check whether it took effect, then resolve the key.',
    );
    expect(new OutcomeUnknownError({ key: "k", by: "takeover" }).message).toBe(
      'A retry took over the Idempotency-Key "k" after its lease ran out: the handler of the request that held it ' +
        "may have run, so it is not run again (rerunAfterTakeover: false)",
    );
  });

  it("keeps the deprecated (key, message) form", () => {
    expect(new OutcomeUnknownError("k", "unknown")).toMatchObject({
      key: "k",
      message: "unknown",
      retryable: false,
    });
  });
});

describe("LedgerStateError", () => {
  it("composes the message for a wrong state, a lost race and an unreadable record", () => {
    const base = { key: "k", action: "approve" } as const;
    expect(
      new LedgerStateError({
        ...base,
        state: "pending",
        reason: "wrong-state",
        expected: "awaiting_approval",
      }).message,
    ).toBe("Cannot approve the call k: it is pending, not awaiting_approval");
    expect(
      new LedgerStateError({
        ...base,
        state: undefined,
        reason: "wrong-state",
        expected: "awaiting_approval",
      }).message,
    ).toBe("Cannot approve the call k: it has no live ledger record, not awaiting_approval");
    expect(new LedgerStateError({ ...base, state: undefined, reason: "changed" }).message).toBe(
      "Cannot approve the call k: its record changed meanwhile",
    );
    const cause = new SyntaxError("bad");
    const unreadable = new LedgerStateError({
      key: "k",
      state: "completed",
      reason: "unreadable",
      record: "call:k",
      cause,
    });
    expect(unreadable).toMatchObject({ message: "The ledger record call:k has unreadable data", cause });
    expect(
      new LedgerStateError({ key: "k", state: "pending", reason: "unrecognised", record: "call:k" }).message,
    ).toBe("The record call:k is not an idemkey ledger record (v1)");
    expect(
      new LedgerStateError({
        key: "k",
        state: "pending",
        reason: "unrecognised",
        record: "call:k",
        versions: [1, 2],
      }).message,
    ).toBe("The record call:k is not an idemkey ledger record (v1 or v2)");
  });

  it("keeps the deprecated (key, state, message) form", () => {
    expect(new LedgerStateError("k", "pending", "no")).toMatchObject({
      key: "k",
      state: "pending",
      message: "no",
    });
  });
});

describe("NetworkError", () => {
  it("says whether the request can have been sent", () => {
    expect(new NetworkError({ code: "ECONNREFUSED", noEffect: true }).message).toBe(
      "The request got no answer (ECONNREFUSED); it was never sent.",
    );
    const reset = new NetworkError({ code: undefined, noEffect: false, detail: "other side closed" });
    expect(reset.message).toBe(
      "The request got no answer (other side closed); it may have taken effect: retry with the same key.",
    );
    expect(reset).toMatchObject({ retryable: true, noEffect: false, code: undefined });
    expect(new NetworkError({ code: undefined, noEffect: false }).message).toMatch(/\(network error\)/);
  });

  it("keeps the deprecated (message, code, noEffect) form", () => {
    expect(new NetworkError("gone", "ECONNRESET", false)).toMatchObject({
      message: "gone",
      code: "ECONNRESET",
    });
  });
});

describe("StoreConfigError", () => {
  it("names the option, its value and the server's reply", () => {
    const cause = new Error("CROSSSLOT Keys in request don't hash to the same slot\nmore");
    const error = new StoreConfigError({
      store: "redis",
      option: "prefix",
      value: "idemkey:",
      reply: cause.message,
      reason: "cross-slot",
      cause,
    });
    expect(error.message).toBe(
      `redis store: Redis refused the store's keys under prefix "idemkey:" as spread over several slots ` +
        `(CROSSSLOT Keys in request don't hash to the same slot): this is a Redis Cluster, so the prefix needs a ` +
        `hash tag, a non-empty {...} part such as "{idemkey}:"; calling again cannot succeed`,
    );
    expect(error).toMatchObject({ store: "redis", option: "prefix", retryable: false, cause });
  });

  it("keeps the deprecated (store, option, message) form", () => {
    expect(new StoreConfigError("redis", "prefix", "no").message).toBe("redis store: no");
  });
});

describe("the data forms are checked by the compiler", () => {
  it("refuses data that misses what the message needs", () => {
    const make = () => [
      // @ts-expect-error: an outcome that could not be saved names the tool and the attempt
      new StoreError({ store: "s", operation: "complete", reason: "outcome-unsaved", detail: "x" }),
      // @ts-expect-error: a lost connection says where it was lost
      new StoreError({ store: "s", operation: "effectOnce", reason: "connection-lost" }),
      // @ts-expect-error: an HTTP conflict names the URL
      new IdempotencyConflictError({ key: "k", by: "http" }),
      // @ts-expect-error: the harness's unknown outcome names the tool and why
      new OutcomeUnknownError({ key: "k" }),
      // @ts-expect-error: a wrong state names the state it expected
      new LedgerStateError({ key: "k", state: "pending", reason: "wrong-state", action: "approve" }),
    ];
    // They still construct at run time (JavaScript callers get no compiler): the point is the type errors above.
    expect(make()).toHaveLength(5);
  });
});
