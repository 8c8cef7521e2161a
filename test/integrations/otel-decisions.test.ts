import { type Attributes, context, propagation } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { idempotency as expressIdempotency } from "../../src/express/index.js";
import { idempotency } from "../../src/hono/index.js";
import {
  createHarness,
  defineTool,
  IdempotencyConflictError,
  idempotencyKey,
  memoryStore,
  OutcomeUnknownError,
} from "../../src/index.js";
import { sha256Hex } from "../../src/key/idempotency-key.js";
import { mcpDedupe } from "../../src/mcp/index.js";
import {
  Attr,
  tracedEvents,
  tracedExpress,
  tracedHarness,
  tracedHono,
  tracedMcpDedupe,
} from "../../src/otel/index.js";
import { fakeTime, flush } from "../harness/support.js";
import { serve } from "../inspector/support.js";
import { type OtelPipeline, otelPipeline, useContextManager } from "../support/otel.js";
import {
  hold,
  tracedExpressCharges,
  tracedHonoCharges,
  tracedNotes,
  watchingPending,
} from "./fixtures/otel-apps.js";

// Each test builds a pipeline of its own, so that each count starts at nothing.
useContextManager();

/** Every string a span carries: name, attributes, events and their attributes, status message, links. */
function strings(
  spans: readonly ReadableSpan[],
  points: readonly { attributes: Attributes }[] = [],
): string[] {
  const out: string[] = [];
  const add = (attributes: Attributes | undefined) => {
    for (const [name, value] of Object.entries(attributes ?? {})) out.push(name, JSON.stringify(value));
  };
  for (const span of spans) {
    out.push(span.name, span.status.message ?? "");
    add(span.attributes);
    for (const event of span.events) {
      out.push(event.name);
      add(event.attributes);
    }
    for (const link of span.links) add(link.attributes);
  }
  for (const point of points) add(point.attributes);
  return out;
}

/** Reads the counters once and expects each one named at its total (`undefined`: never counted). */
async function expectCounts(t: OtelPipeline, totals: Record<string, number | undefined>): Promise<void> {
  const counts = await t.counts();
  for (const [name, total] of Object.entries(totals)) expect(counts[name], name).toBe(total);
}

/**
 * An unguarded tool whose sends are lost on the way back (the money may have gone), so that its outcome is unknown:
 * every send, or the first `lost`, after which it answers "wired". With an `owner`, the owner's own record of what
 * it did, each send adds its key there and the tool's reconcile asks it, apart from the harness.
 */
function lostWire(options: { lost?: number; owner?: Set<string> } = {}) {
  const { lost = Number.POSITIVE_INFINITY, owner } = options;
  let sends = 0;
  const wire = defineTool({
    name: "wire",
    effect: "unguarded",
    run: (_args: { cents: number }, ctx) => {
      sends++;
      owner?.add(ctx.idempotencyKey);
      if (sends <= lost) throw new Error("socket hang up");
      return "wired";
    },
    reconcile:
      owner &&
      ((_args, ctx) =>
        owner.has(ctx.idempotencyKey) ? { status: "done", result: "wired" } : { status: "not_done" }),
  });
  return { wire, sends: () => sends };
}

describe("tracedHarness: one count per decision", () => {
  it("replayed: each call answered from the ledger is one replay, and the tool runs once", async () => {
    const t = otelPipeline();
    let runs = 0;
    const tool = defineTool({ name: "send", effect: "keyed", run: () => ++runs });
    const harness = tracedHarness({ store: memoryStore() }, t.telemetry);
    for (let i = 0; i < 3; i++) await harness.call("task", tool, { to: "a" });
    expect(runs).toBe(1);
    await expectCounts(t, {
      "idemkey.replays": 2,
      "idemkey.calls{replayed}": 2,
      "idemkey.calls{executed}": 1,
    });
  });

  it("waited: a call that waits for the same call running in another process is one wait", async () => {
    const t = otelPipeline();
    const held = hold();
    let runs = 0;
    const tool = defineTool({
      name: "send",
      effect: "keyed",
      run: async () => {
        runs++;
        await held.enter();
        return "sent";
      },
    });
    const store = memoryStore();
    // The other process's claims that found the first call pending: how the test knows it is waiting.
    const watched = watchingPending(store);
    const harness = tracedHarness({ store }, t.telemetry);
    const other = tracedHarness(
      { store: watched.store, wait: { minDelayMs: 1, maxDelayMs: 5 } },
      t.telemetry,
    );
    const first = harness.call("task", tool, { to: "a" });
    await held.started;
    const second = other.call("task", tool, { to: "a" });
    await expect.poll(() => watched.sawPending()).toBeGreaterThan(0);
    held.release();
    expect(await Promise.all([first, second])).toEqual(["sent", "sent"]);
    expect(runs).toBe(1);
    await expectCounts(t, { "idemkey.waits{pending}": 1, "idemkey.calls{waited}": 1 });
  });

  it("conflict: a call the owner refuses as a reused key (IdempotencyConflictError) is one conflict", async () => {
    const t = otelPipeline();
    let runs = 0;
    const tool = defineTool({
      name: "charge",
      effect: "keyed",
      run: (_args, ctx) => {
        runs++;
        // What an owner's `effectOnce` throws on a key recorded with another fingerprint.
        throw new IdempotencyConflictError({ key: ctx.idempotencyKey });
      },
    });
    const harness = tracedHarness({ store: memoryStore() }, t.telemetry);
    await expect(harness.call("task", tool, { cents: 1 })).rejects.toBeInstanceOf(IdempotencyConflictError);
    expect(runs).toBe(1); // final: not retried
    await expectCounts(t, { "idemkey.conflicts": 1, "idemkey.calls{failed}": 1 });
  });

  it("unknown surfaced, then resolved by a person: one unknown, one resolution by harness.resolve, then replays", async () => {
    const t = otelPipeline();
    const { wire, sends } = lostWire();
    const harness = tracedHarness({ store: memoryStore() }, t.telemetry);
    await expect(harness.call("task", wire, { cents: 9 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    await expectCounts(t, { "idemkey.outcome_unknown": 1 });

    const key = idempotencyKey("task", "wire", { cents: 9 });
    await harness.resolve(key, { result: "wired" }, { by: "ana" });
    expect(await harness.call("task", wire, { cents: 9 })).toBe("wired");
    expect(sends()).toBe(1);
    await expectCounts(t, {
      "idemkey.outcome_unknown": 1,
      "idemkey.resolutions{result}": 1,
      "idemkey.replays": 1,
    });
    const resolve = t.spans().filter((s) => s.name === "resolve wire");
    expect(resolve).toHaveLength(1);
    expect(resolve[0]!.attributes).toMatchObject({
      [Attr.by]: "ana",
      [Attr.resolvedHow]: "result",
      [Attr.key]: key,
    });
  });

  it("resolved by the tool's reconcile: one resolution (reconcile), the tool not re-run, the next call a replay", async () => {
    const t = otelPipeline();
    const { wire, sends } = lostWire({ owner: new Set() });
    const harness = tracedHarness({ store: memoryStore() }, t.telemetry);
    // The harness asks reconcile as soon as the attempt's outcome is unknown: the call returns what it found.
    expect(await harness.call("task", wire, { cents: 9 })).toBe("wired");
    expect(await harness.call("task", wire, { cents: 9 })).toBe("wired");
    expect(sends()).toBe(1);
    await expectCounts(t, { "idemkey.resolutions{reconcile}": 1, "idemkey.replays": 1 });
  });

  it("resolved by a person on the inspector's page: one resolution, counted through tracedEvents", async () => {
    const t = otelPipeline();
    const { wire, sends } = lostWire();
    const store = memoryStore();
    const harness = tracedHarness({ store }, t.telemetry);
    await expect(harness.call("task", wire, { cents: 9 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    const key = idempotencyKey("task", "wire", { cents: 9 });
    const page = await serve({ store, user: "os-user", onEvent: tracedEvents(t.telemetry) });
    try {
      const res = await page.post(`/api/calls/${key}/resolve`, { result: "wired", by: "bo" });
      expect(res.status).toBe(200);
    } finally {
      await page.close();
    }
    expect(await harness.call("task", wire, { cents: 9 })).toBe("wired");
    expect(sends()).toBe(1);
    await expectCounts(t, { "idemkey.resolutions{result}": 1 });
    const resolve = t.spans().filter((s) => s.name === "resolve wire");
    expect(resolve.map((s) => s.attributes[Attr.by])).toEqual(["bo"]);
  });

  it("resolved as not done ({ retry: true }) is one resolution of its own, and the next call runs", async () => {
    const t = otelPipeline();
    const { wire, sends } = lostWire({ lost: 1 });
    const harness = tracedHarness({ store: memoryStore() }, t.telemetry);
    await expect(harness.call("task", wire, { cents: 9 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    await harness.resolve(idempotencyKey("task", "wire", { cents: 9 }), { retry: true }, { by: "ana" });
    expect(await harness.call("task", wire, { cents: 9 })).toBe("wired");
    expect(sends()).toBe(2);
    await expectCounts(t, { "idemkey.resolutions{retry}": 1, "idemkey.resolutions{result}": undefined });
  });
});

describe("tracedHarness: a late completion", () => {
  it("a worker stalled past its lease whose result lands after a taker found the outcome unknown: one resolution (late_completion)", async () => {
    const t = otelPipeline();
    const time = fakeTime();
    const store = memoryStore({ clock: time.clock });
    let stall = true;
    let sends = 0;
    const post = defineTool({
      name: "post",
      effect: "unguarded",
      run: async () => {
        if (stall) await time.sleep(10_000);
        return ++sends;
      },
    });
    // The stalled worker's renewals (every leaseMs / 3) never come: its event loop is blocked.
    const stalled = tracedHarness(
      {
        store,
        clock: time.clock,
        sleep: (ms) => (ms === 1_000 ? new Promise<void>(() => {}) : time.sleep(ms)),
        leaseMs: 3_000,
      },
      t.telemetry,
    );
    const slow = stalled.call("task", post, {});
    await flush();
    stall = false;
    const taker = createHarness({ store, clock: time.clock, sleep: time.sleep, leaseMs: 3_000 });
    await expect(time.run(taker.call("task", post, {}))).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(await time.run(slow)).toBe(1);
    expect(await taker.call("task", post, {})).toBe(1);
    expect(sends).toBe(1);
    await expectCounts(t, {
      "idemkey.resolutions{late_completion}": 1,
      "idemkey.calls{executed}": 1,
    });
  });
});

/**
 * An HTTP bridge's request held in its handler while a duplicate of it is refused as in flight (409), then
 * answered (201) once let go.
 */
async function inFlightRefused(
  post: (key: string, body: { slow: boolean }) => Response | Promise<Response>,
  held: ReturnType<typeof hold>,
): Promise<void> {
  const slow = post("k2", { slow: true });
  await held.started;
  expect((await post("k2", { slow: true })).status).toBe(409);
  held.release();
  expect((await slow).status).toBe(201);
}

describe("owner bridges: one count per decision", () => {
  it("tracedHono: a replay, a reused key (conflict), a key in flight and an unknown outcome are counted once each", async () => {
    const t = otelPipeline();
    const held = hold();
    let runs = 0;
    const { app, post } = tracedHonoCharges(t.telemetry, async (c) => {
      runs++;
      const body = await c.req.json();
      if (body.slow) {
        await held.enter();
      }
      if (body.boom) throw new Error("connection reset after the charge");
      return c.json({ charge: `ch_${runs}` }, 201);
    });
    // Hono's own handler would print the handler's throw; the answer is what the test reads.
    app.onError((_error, c) => c.text("failed", 500));
    expect((await post("k1", { cents: 5 })).status).toBe(201);
    expect((await post("k1", { cents: 5 })).headers.get("idempotent-replayed")).toBe("true");
    expect((await post("k1", { cents: 6 })).status).toBe(422);
    await inFlightRefused(post, held);
    expect((await post("k3", { boom: true })).status).toBe(500);
    const unknown = await post("k3", { boom: true });
    expect(unknown.status).toBe(409);
    expect(runs).toBe(3);

    await expectCounts(t, {
      "idemkey.replays": 1,
      "idemkey.conflicts": 1,
      "idemkey.in_flight": 1,
      "idemkey.outcome_unknown": 1,
    });
    const refusals = t
      .spans()
      .filter((s) => s.attributes[Attr.outcome] === "refused")
      .map((s) => s.attributes[Attr.refusal]);
    expect(refusals).toEqual(["key_reused", "key_in_flight", "outcome_unknown"]);
  });

  it("tracedExpress: a reused key is one conflict and a key in flight one in_flight, on a real listener", async () => {
    const t = otelPipeline();
    const held = hold();
    let runs = 0;
    const charges = await tracedExpressCharges(t.telemetry, async (req, res) => {
      runs++;
      if (req.get("x-slow") === "1") {
        await held.enter();
      }
      res.status(201).json({ charge: `ch_${runs}` });
    });
    const post = (key: string, body: { slow?: boolean; cents?: number }) =>
      charges.post(key, body, body.slow ? { "x-slow": "1" } : {});
    try {
      expect((await post("k1", { cents: 5 })).status).toBe(201);
      expect((await post("k1", { cents: 5 })).status).toBe(201);
      expect((await post("k1", { cents: 6 })).status).toBe(422);
      await inFlightRefused(post, held);
    } finally {
      charges.close();
    }
    expect(runs).toBe(2);
    await expect.poll(() => t.spans().length).toBe(5);
    await expectCounts(t, { "idemkey.replays": 1, "idemkey.conflicts": 1, "idemkey.in_flight": 1 });
  });

  it("tracedMcpDedupe: a replay, a reused key and a key in flight are counted once each", async () => {
    const t = otelPipeline();
    const held = hold();
    let runs = 0;
    const notes = await tracedNotes(t.telemetry, async (text) => {
      runs++;
      if (text === "slow") {
        await held.enter();
      }
      return { content: [{ type: "text", text }] };
    });
    const send = notes.call;
    try {
      await send("k-1", "hi");
      await send("k-1", "hi");
      expect((await send("k-1", "other")).isError).toBe(true);
      const slow = send("k-2", "slow");
      await held.started;
      expect((await send("k-2", "slow")).isError).toBe(true);
      held.release();
      expect((await slow).isError).toBeFalsy();
    } finally {
      await notes.close();
    }
    expect(runs).toBe(2);
    await expectCounts(t, { "idemkey.replays": 1, "idemkey.conflicts": 1, "idemkey.in_flight": 1 });
  });
});

describe("hashKeys: no span, event or counter holds a raw key", () => {
  it("tracedHarness: spans, events, exception messages and baggage carry the key's SHA-256 only", async () => {
    const t = otelPipeline({ hashKeys: true });
    const key = idempotencyKey("task", "wire", { cents: 9 });
    let baggage: string | undefined;
    let hashBaggage: string | undefined;
    const wire = defineTool({
      name: "wire",
      effect: "unguarded",
      run: (_args, ctx) => {
        const bag = propagation.getBaggage(context.active());
        baggage = bag?.getEntry("idemkey.key")?.value;
        hashBaggage = bag?.getEntry("idemkey.key_sha256")?.value;
        // An error that names the key, as owners' errors do.
        throw new Error(`owner lost the request with key ${ctx.idempotencyKey}`);
      },
    });
    const harness = tracedHarness({ store: memoryStore() }, t.telemetry);
    await expect(harness.call("task", wire, { cents: 9 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    await expect(harness.call("task", wire, { cents: 9 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    await harness.resolve(key, { result: "wired" }, { by: "ana" });
    await harness.call("task", wire, { cents: 9 });
    await t.counts();

    expect(baggage).toBeUndefined();
    expect(hashBaggage).toBe(sha256Hex(key));
    const all = strings(t.spans(), t.points());
    expect(all.filter((s) => s.includes(key))).toEqual([]);
    expect(t.spans().length).toBe(4);
    for (const span of t.spans()) expect(span.attributes[Attr.keyHash]).toBe(sha256Hex(key));
    // The exception was recorded, scrubbed rather than dropped.
    expect(all.some((s) => s.includes(`sha256:${sha256Hex(key)}`))).toBe(true);
  });

  it("tracedHono, tracedExpress and tracedMcpDedupe write the key's SHA-256 only; the default writes the key", async () => {
    const key = "k-secret-8c1f";
    const hashed = otelPipeline({ hashKeys: true });
    const plain = otelPipeline();
    for (const t of [hashed, plain]) {
      const hono = tracedHonoCharges(t.telemetry, (c) => c.json({ ok: true }), "/c");
      await hono.post(key, { a: 1 });
      await hono.post(key, { a: 1 });
      await hono.post(key, { a: 2 });

      const ex = await tracedExpressCharges(
        t.telemetry,
        (_req, res) => {
          res.status(201).json({ ok: true });
        },
        "/c",
      );
      try {
        for (const body of [{ a: 1 }, { a: 2 }]) await ex.post(key, body);
      } finally {
        ex.close();
      }

      const notes = await tracedNotes(t.telemetry, (text) => ({ content: [{ type: "text", text }] }), "note");
      try {
        for (const text of ["hi", "hi", "other"]) await notes.call(key, text);
      } finally {
        await notes.close();
      }
      await expect.poll(() => t.spans().length).toBe(8);
      await t.counts();
    }
    const hashedStrings = strings(hashed.spans(), hashed.points());
    expect(hashedStrings.filter((s) => s.includes(key))).toEqual([]);
    for (const span of hashed.spans()) expect(span.attributes[Attr.keyHash]).toBe(sha256Hex(key));
    for (const span of plain.spans()) {
      expect(span.attributes[Attr.key]).toBe(key);
      expect(span.attributes[Attr.keyHash]).toBeUndefined();
    }
  });

  it("validates hashKeys on every factory, naming the option", () => {
    const bad = { hashKeys: "yes" as unknown as boolean };
    const message = /options\.hashKeys must be a boolean/;
    expect(() => tracedHarness({}, bad)).toThrow(message);
    expect(() => tracedHono(idempotency({ store: memoryStore(), scope: "single-tenant" }), bad)).toThrow(
      message,
    );
    expect(() =>
      tracedExpress(expressIdempotency({ store: memoryStore(), scope: "single-tenant" }), bad),
    ).toThrow(message);
    expect(() => tracedMcpDedupe(mcpDedupe({ store: memoryStore() }), bad)).toThrow(message);
  });
});
