import { describe, expect, it } from "vitest";
import {
  CanonicalizationError,
  createHarness,
  defineTool,
  idempotencyKey,
  memoryStore,
  OutcomeUnknownError,
  sha256Hex,
  ToolCallError,
} from "../../src/index.js";
import { eventLog, fakeOwner, fakeTime } from "./support.js";

type PrArgs = { repo: string; head: string; title: string };

describe("harness.call by effect", () => {
  it("read: runs every time, never writes the ledger", async () => {
    const store = memoryStore();
    const harness = createHarness({ store });
    let runs = 0;
    const search = defineTool({
      name: "search",
      effect: "read",
      run: (args: { q: string }) => ({ hits: [args.q, ++runs] }),
    });
    expect(await harness.call("t1", search, { q: "x" })).toEqual({ hits: ["x", 1] });
    expect(await harness.call("t1", search, { q: "x" })).toEqual({ hits: ["x", 2] });
    expect(runs).toBe(2);
    expect(await store.list()).toEqual([]);
  });

  it("keyed: forwards the derived key, records the result, replays without running again", async () => {
    const owner = fakeOwner();
    const store = memoryStore();
    const log = eventLog();
    const openPr = defineTool({
      name: "openPullRequest",
      effect: "keyed",
      run: (args: PrArgs, ctx) => owner.keyed(ctx.idempotencyKey, args),
    });
    const args = { repo: "acme/api", head: "fix-42", title: "Fix" };
    const harness = createHarness({ store, onEvent: log.onEvent });
    const first = await harness.call("task-8812", openPr, args);
    const second = await harness.call("task-8812", openPr, args);
    expect(first).toEqual({ id: 1 });
    expect(second).toEqual(first);
    expect(owner.requests).toEqual([{ key: idempotencyKey("task-8812", "openPullRequest", args), args }]);
    expect(log.types()).toEqual(["executed", "replayed"]);
    const entry = await harness.get(owner.requests[0]!.key);
    expect(entry).toMatchObject({
      state: "completed",
      taskId: "task-8812",
      tool: "openPullRequest",
      effect: "keyed",
      args,
      result: { id: 1 },
      attempts: 1,
      argsHash: sha256Hex(JSON.stringify({ head: "fix-42", repo: "acme/api", title: "Fix" })),
    });
  });

  it("keyed: a new harness on the same store replays (a restart with a durable store)", async () => {
    const owner = fakeOwner();
    const store = memoryStore();
    const tool = defineTool({
      name: "charge",
      effect: "keyed",
      run: (args: { cents: number }, ctx) => owner.unguarded(ctx.idempotencyKey, args),
    });
    await createHarness({ store }).call("t", tool, { cents: 5 });
    const log = eventLog();
    expect(await createHarness({ store, onEvent: log.onEvent }).call("t", tool, { cents: 5 })).toEqual({
      id: 1,
    });
    // Counted by the owner, which here does not dedupe: only the ledger kept the second call from running.
    expect(owner.effects).toHaveLength(1);
    expect(log.types()).toEqual(["replayed"]);
  });

  it("different arguments, tasks or steps are different calls", async () => {
    const owner = fakeOwner();
    const harness = createHarness();
    const tool = defineTool({
      name: "send",
      effect: "keyed",
      run: (args: { text: string }, ctx) => owner.keyed(ctx.idempotencyKey, args),
    });
    await harness.call("t", tool, { text: "a" });
    await harness.call("t", tool, { text: "b" });
    await harness.call("u", tool, { text: "a" });
    await harness.call("t", tool, { text: "a" }, { step: 2 });
    await harness.call("t", tool, { text: "a" }, { step: 2 });
    expect(owner.effects).toHaveLength(4);
    expect(owner.requests[3]!.key).toBe(idempotencyKey("t", "send", { text: "a" }, { step: 2 }));
  });

  it("idempotent: recorded and replayed like keyed", async () => {
    const state = new Map<string, string>();
    let puts = 0;
    const harness = createHarness();
    const setTopic = defineTool({
      name: "setTopic",
      effect: "idempotent",
      run: (args: { channel: string; topic: string }) => {
        puts++;
        state.set(args.channel, args.topic);
        return { ok: true };
      },
    });
    await harness.call("t", setTopic, { channel: "c", topic: "x" });
    await harness.call("t", setTopic, { channel: "c", topic: "x" });
    expect(puts).toBe(1);
    expect(state.get("c")).toBe("x");
  });

  it("unguarded: an attempt that may have reached the owner is never repeated, and says so with the key", async () => {
    const owner = fakeOwner();
    const log = eventLog();
    const harness = createHarness({ onEvent: log.onEvent, retry: { retries: 5, minDelayMs: 0 } });
    const post = defineTool({
      name: "postTweet",
      effect: "unguarded",
      run: (args: { text: string }, ctx) => {
        owner.unguarded(ctx.idempotencyKey, args);
        throw new Error("socket hang up");
      },
    });
    const key = harness.key("t", post, { text: "hi" });
    const error = await harness.call("t", post, { text: "hi" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as OutcomeUnknownError).key).toBe(key);
    expect((error as Error).cause).toMatchObject({ message: "socket hang up" });
    expect(owner.effects).toHaveLength(1);
    // A later call with the same arguments does not run it either.
    await expect(harness.call("t", post, { text: "hi" })).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(owner.requests).toHaveLength(1);
    expect((await harness.get(key))?.state).toBe("outcome_unknown");
    expect(log.types()).toEqual(["outcome_unknown"]);
  });

  it("unguarded: an error marked noEffect is retried, with the same key", async () => {
    const owner = fakeOwner();
    const time = fakeTime();
    const harness = createHarness({ clock: time.clock, sleep: time.sleep, retry: { jitter: false } });
    let calls = 0;
    const post = defineTool({
      name: "postTweet",
      effect: "unguarded",
      run: (args: { text: string }, ctx) => {
        if (++calls < 3) throw new ToolCallError("connection refused", { noEffect: true });
        return owner.unguarded(ctx.idempotencyKey, args);
      },
    });
    expect(await time.run(harness.call("t", post, { text: "hi" }))).toEqual({ id: 1 });
    expect(calls).toBe(3);
    expect(owner.effects).toHaveLength(1);
  });

  it("unguarded: a successful call is recorded and replayed", async () => {
    const owner = fakeOwner();
    const harness = createHarness();
    const post = defineTool({
      name: "postTweet",
      effect: "unguarded",
      run: (args: { text: string }, ctx) => owner.unguarded(ctx.idempotencyKey, args),
    });
    await harness.call("t", post, { text: "hi" });
    await harness.call("t", post, { text: "hi" });
    expect(owner.effects).toHaveLength(1);
  });
});

describe("events", () => {
  it("carry the key, task, tool, attempt and the duration since the call began", async () => {
    const time = fakeTime();
    const log = eventLog();
    const harness = createHarness({ clock: time.clock, sleep: time.sleep, onEvent: log.onEvent });
    const tool = defineTool({
      name: "build",
      effect: "keyed",
      run: async (_: { n: number }, ctx) => {
        await time.sleep(1_234);
        if (ctx.attempt === 1) throw new ToolCallError("busy", { retryAfterMs: 100 });
        return "ok";
      },
    });
    await time.run(harness.call("task-1", tool, { n: 1 }));
    await harness.call("task-1", tool, { n: 1 });
    const key = harness.key("task-1", tool, { n: 1 });
    expect(log.events).toEqual([
      {
        type: "retried",
        key,
        taskId: "task-1",
        tool: "build",
        attempt: 1,
        durationMs: 1_234,
        delayMs: 100,
        error: expect.any(ToolCallError),
      },
      {
        type: "executed",
        key,
        taskId: "task-1",
        tool: "build",
        attempt: 2,
        durationMs: 2_568,
        recorded: true,
        argsDiffer: false,
      },
      {
        type: "replayed",
        key,
        taskId: "task-1",
        tool: "build",
        attempt: 2,
        durationMs: 0,
        argsDiffer: false,
      },
    ]);
  });
});

describe("identity", () => {
  const owner = fakeOwner();
  const openPr = defineTool({
    name: "openPullRequest",
    effect: "keyed",
    identity: (args: PrArgs) => ({ repo: args.repo, head: args.head }),
    run: (args: PrArgs, ctx) => ({ ...owner.keyed(ctx.idempotencyKey, args), title: args.title }),
  });

  it("keys on the identity, and a re-worded call replays the first one with argsDiffer", async () => {
    const log = eventLog();
    const harness = createHarness({ onEvent: log.onEvent });
    const first = await harness.call("t", openPr, { repo: "r", head: "h", title: "Fix the bug" });
    const again = await harness.call("t", openPr, { repo: "r", head: "h", title: "Fix bug #42" });
    expect(again).toEqual(first);
    expect(first).toMatchObject({ title: "Fix the bug" });
    expect(owner.requests).toHaveLength(1);
    expect(owner.requests[0]!.key).toBe(idempotencyKey("t", "openPullRequest", { repo: "r", head: "h" }));
    expect(log.events.map((e) => [e.type, "argsDiffer" in e && e.argsDiffer])).toEqual([
      ["executed", false],
      ["replayed", true],
    ]);
  });

  it("reports an identity that is not JSON with its own path", async () => {
    const bad = defineTool({
      name: "bad",
      effect: "keyed",
      identity: (args: { n: bigint }) => ({ n: args.n }),
      run: () => 1,
    });
    const error = await createHarness()
      .call("t", bad, { n: 1n })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CanonicalizationError);
    expect((error as CanonicalizationError).path).toBe("$.identity.n");
  });
});

describe("in-process dedupe", () => {
  it("concurrent identical calls share one run and one promise outcome", async () => {
    const owner = fakeOwner();
    const log = eventLog();
    const harness = createHarness({ onEvent: log.onEvent });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tool = defineTool({
      name: "slow",
      effect: "keyed",
      run: async (args: { n: number }, ctx) => {
        await gate;
        return owner.unguarded(ctx.idempotencyKey, args);
      },
    });
    const calls = [1, 2, 3].map(() => harness.call("t", tool, { n: 1 }));
    release();
    const results = await Promise.all(calls);
    expect(results).toEqual([{ id: 1 }, { id: 1 }, { id: 1 }]);
    expect(owner.effects).toHaveLength(1);
    expect(log.types().sort()).toEqual(["executed", "waited", "waited"]);
  });

  it("a failure is shared too, and the key is free again afterwards", async () => {
    const harness = createHarness({ retry: { retries: 0 } });
    let runs = 0;
    const tool = defineTool({
      name: "flaky",
      effect: "keyed",
      run: async () => {
        runs++;
        await Promise.resolve();
        if (runs === 1) throw new Error("boom");
        return "ok";
      },
    });
    const both = await Promise.allSettled([harness.call("t", tool, {}), harness.call("t", tool, {})]);
    expect(both.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(runs).toBe(1);
    expect(await harness.call("t", tool, {})).toBe("ok");
    expect(runs).toBe(2);
  });
});

describe("results", () => {
  it("returns the JSON form of the result to the first caller as to a replay", async () => {
    const harness = createHarness();
    const tool = defineTool({
      name: "when",
      effect: "keyed",
      run: () => ({ at: new Date(0), skip: undefined }),
    });
    const first = await harness.call("t", tool, {});
    expect(first).toEqual({ at: "1970-01-01T00:00:00.000Z" });
    expect(await harness.call("t", tool, {})).toEqual(first);
  });

  it("rejects a result that is not JSON, and closes the key: the effect happened, so it never runs again", async () => {
    const owner = fakeOwner();
    const log = eventLog();
    const store = memoryStore();
    const harness = createHarness({ store, onEvent: log.onEvent });
    let asMap = true;
    const tool = defineTool({
      name: "lookup",
      effect: "keyed",
      run: (_: { id: number }, ctx) => {
        owner.keyed(ctx.idempotencyKey, {});
        return asMap ? { found: new Map([["a", 1]]) } : { found: { a: 1 } };
      },
    });
    const error = await harness.call("t", tool, { id: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CanonicalizationError);
    expect((error as CanonicalizationError).path).toBe("$.result.found");
    expect((error as Error).message).toMatch(/lookup.*not a JSON value/);
    expect(owner.requests).toHaveLength(1); // not retried: it would fail the same way
    expect(await store.list()).toMatchObject([{ state: "completed", result: null }]);
    expect(log.types()).toEqual(["failed"]);
    asMap = false;
    await expect(harness.call("t", tool, { id: 1 })).rejects.toBeInstanceOf(CanonicalizationError);
    expect(owner.requests).toHaveLength(1);
    expect(owner.effects).toHaveLength(1);
  });

  it("an unguarded tool that returns a non-JSON result took effect: its outcome is recorded unknown", async () => {
    const owner = fakeOwner();
    const harness = createHarness();
    const tool = defineTool({
      name: "post",
      effect: "unguarded",
      run: (_: object, ctx) => {
        owner.unguarded(ctx.idempotencyKey, {});
        return { n: 10n };
      },
    });
    const error = await harness.call("t", tool, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as Error).cause).toBeInstanceOf(CanonicalizationError);
    await expect(harness.call("t", tool, {})).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(owner.effects).toHaveLength(1);
  });

  it("a final failure releases the claim: never recorded completed, and a later call runs again", async () => {
    const owner = fakeOwner();
    const store = memoryStore();
    const log = eventLog();
    const harness = createHarness({ store, onEvent: log.onEvent, retry: { retries: 0 } });
    let fail = true;
    const tool = defineTool({
      name: "create",
      effect: "keyed",
      run: (args: { n: number }, ctx) => {
        const saved = owner.keyed(ctx.idempotencyKey, args);
        if (fail) throw new Error("502 after the owner saved it");
        return saved;
      },
    });
    await expect(harness.call("t", tool, { n: 1 })).rejects.toThrow("502");
    expect(await store.list()).toEqual([]);
    expect(log.types()).toEqual(["failed"]);
    fail = false;
    expect(await harness.call("t", tool, { n: 1 })).toEqual({ id: 1 });
    expect(owner.requests.map((r) => r.key)).toEqual([owner.requests[0]!.key, owner.requests[0]!.key]);
    expect(owner.effects).toHaveLength(1);
  });
});
