import { propagation, trace } from "@opentelemetry/api";
import {
  MeterProvider,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import {
  createHarness,
  defineTool,
  type HarnessEvent,
  idempotencyKey,
  memoryStore,
  OutcomeUnknownError,
} from "../../src/index.js";
import { REPLAYED_META } from "../../src/mcp/index.js";
import { Attr, KEY_BAGGAGE, tracedHarness } from "../../src/otel/index.js";
import { effectLog } from "../support/effect-log.js";
import { OnDemandReader, otelPipeline, useContextManager } from "../support/otel.js";
import { idemkeyWarnings } from "../support/warnings.js";
import {
  hold,
  tracedExpressCharges,
  tracedHonoCharges,
  tracedNotes,
  watchingPending,
} from "./fixtures/otel-apps.js";

useContextManager();
// One pipeline for the file: each test reads the counters before and after its calls, and starts with no spans.
const otel = otelPipeline();
const { telemetry } = otel;
const appTracer = telemetry.tracerProvider.getTracer("app");
afterAll(() => otel.shutdown());
beforeEach(() => otel.reset());

const spans = (name: string) => otel.spans().filter((s) => s.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

/** A call made inside an app span, as an agent turn would: returns the app span's id. */
async function inTurn<T>(name: string, fn: () => Promise<T>): Promise<{ value: T; turn: string }> {
  return appTracer.startActiveSpan(name, async (span) => {
    try {
      return { value: await fn(), turn: span.spanContext().spanId };
    } finally {
      span.end();
    }
  });
}

describe("tracedHarness", () => {
  it("a fresh call is an execute_tool span under the caller's span, and the tool runs inside it with the key in baggage", async () => {
    const before = await otel.counts();
    const seen: { baggageKey?: string; parent?: string } = {};
    const send = defineTool({
      name: "send_email",
      effect: "keyed",
      run: async (args: { to: string }, ctx) => {
        seen.baggageKey = propagation.getActiveBaggage()?.getEntry(KEY_BAGGAGE)?.value;
        // What the tool's own HTTP client would start: a child of the idemkey span.
        appTracer.startActiveSpan("POST /send", (span) => span.end());
        return { id: `mail-${args.to}`, key: ctx.idempotencyKey };
      },
    });
    const harness = tracedHarness({ store: memoryStore() }, telemetry);
    const { turn } = await inTurn("turn", () => harness.call("task-1", send, { to: "ada" }));

    const key = idempotencyKey("task-1", "send_email", { to: "ada" });
    const [span] = spans("execute_tool send_email");
    expect(span).toBeDefined();
    expect(parentOf(span!)).toBe(turn);
    expect(span!.attributes).toMatchObject({
      [Attr.operationName]: "execute_tool",
      [Attr.toolName]: "send_email",
      [Attr.key]: key,
      [Attr.taskId]: "task-1",
      [Attr.effect]: "keyed",
      [Attr.outcome]: "executed",
      [Attr.attempt]: 1,
    });
    expect(span!.events.map((e) => e.name)).toEqual(["idemkey.executed"]);
    expect(seen.baggageKey).toBe(key);
    const [http] = spans("POST /send");
    expect(parentOf(http!)).toBe(span!.spanContext().spanId);
    const after = await otel.counts();
    expect((after["idemkey.calls{executed}"] ?? 0) - (before["idemkey.calls{executed}"] ?? 0)).toBe(1);
  });

  it("a replay says replayed, runs nothing, and counts a replay", async () => {
    let runs = 0;
    const note = defineTool({
      name: "add_note",
      effect: "keyed",
      run: () => ({ n: ++runs }),
    });
    const events: HarnessEvent[] = [];
    const harness = tracedHarness({ store: memoryStore(), onEvent: (e) => events.push(e) }, telemetry);
    await harness.call("task-2", note, { text: "hi" });
    const before = await otel.counts();
    const { value, turn } = await inTurn("resume", () => harness.call("task-2", note, { text: "hi" }));

    expect(value).toEqual({ n: 1 });
    expect(runs).toBe(1);
    // The application's own onEvent still hears everything.
    expect(events.map((e) => e.type)).toEqual(["executed", "replayed"]);
    const replay = spans("execute_tool add_note")[1]!;
    expect(parentOf(replay)).toBe(turn);
    expect(replay.attributes).toMatchObject({
      [Attr.outcome]: "replayed",
      [Attr.key]: idempotencyKey("task-2", "add_note", { text: "hi" }),
      [Attr.attempt]: 1,
    });
    const after = await otel.counts();
    expect(after["idemkey.replays"]! - (before["idemkey.replays"] ?? 0)).toBe(1);
    expect(after["idemkey.calls{replayed}"]! - (before["idemkey.calls{replayed}"] ?? 0)).toBe(1);
  });

  it("a call that waits for the same call says waited, in this process and for another process's claim", async () => {
    const held = hold();
    let runs = 0;
    const refund = defineTool({
      name: "refund",
      effect: "keyed",
      run: async () => {
        runs++;
        await held.enter();
        return { refund: "re_1" };
      },
    });
    const store = memoryStore();
    const harness = tracedHarness({ store }, telemetry);
    // Another process on the same ledger, polling quickly so the test does not sit in backoff; its claims that
    // found the first call pending say when it is waiting.
    const watched = watchingPending(store);
    const other = tracedHarness({ store: watched.store, wait: { minDelayMs: 1, maxDelayMs: 5 } }, telemetry);
    const before = await otel.counts();

    const first = inTurn("turn-a", () => harness.call("task-3", refund, { cents: 500 }));
    await held.started;
    const sameProcess = inTurn("turn-b", () => harness.call("task-3", refund, { cents: 500 }));
    const otherProcess = inTurn("turn-c", () => other.call("task-3", refund, { cents: 500 }));
    await expect.poll(() => watched.sawPending()).toBeGreaterThan(0);
    expect(otel.spans()).toHaveLength(0);
    held.release();
    const results = await Promise.all([first, sameProcess, otherProcess]);

    expect(runs).toBe(1);
    expect(results.map((r) => r.value)).toEqual([{ refund: "re_1" }, { refund: "re_1" }, { refund: "re_1" }]);
    const byParent = new Map(spans("execute_tool refund").map((s) => [parentOf(s), s]));
    expect(byParent.get(results[0].turn)!.attributes[Attr.outcome]).toBe("executed");
    expect(byParent.get(results[1].turn)!.attributes).toMatchObject({
      [Attr.outcome]: "waited",
      [Attr.waitedOn]: "in_process",
    });
    expect(byParent.get(results[2].turn)!.attributes).toMatchObject({
      [Attr.outcome]: "waited",
      [Attr.waitedOn]: "pending",
    });
    const after = await otel.counts();
    expect(after["idemkey.waits{in_process}"]! - (before["idemkey.waits{in_process}"] ?? 0)).toBe(1);
    expect(after["idemkey.waits{pending}"]! - (before["idemkey.waits{pending}"] ?? 0)).toBe(1);
  });

  it("an unknown outcome is an error span with outcome_unknown, counted, and its repeat says the same", async () => {
    let sends = 0;
    const wire = defineTool({
      name: "wire_money",
      effect: "unguarded",
      run: () => {
        sends++;
        throw new Error("socket hang up");
      },
    });
    const harness = tracedHarness({ store: memoryStore() }, telemetry);
    const before = await otel.counts();
    const { turn } = await inTurn("turn", async () => {
      await expect(harness.call("task-4", wire, { cents: 9 })).rejects.toBeInstanceOf(OutcomeUnknownError);
      await expect(harness.call("task-4", wire, { cents: 9 })).rejects.toBeInstanceOf(OutcomeUnknownError);
      return undefined;
    });

    expect(sends).toBe(1);
    const [first, repeat] = spans("execute_tool wire_money");
    for (const span of [first!, repeat!]) {
      expect(parentOf(span)).toBe(turn);
      expect(span.status.code).toBe(2); // SpanStatusCode.ERROR
      expect(span.attributes).toMatchObject({
        [Attr.outcome]: "outcome_unknown",
        [Attr.key]: idempotencyKey("task-4", "wire_money", { cents: 9 }),
      });
      expect(span.events.some((e) => e.name === "exception")).toBe(true);
    }
    expect(first!.events.map((e) => e.name)).toContain("idemkey.outcome_unknown");
    const after = await otel.counts();
    expect(after["idemkey.outcome_unknown"]! - (before["idemkey.outcome_unknown"] ?? 0)).toBe(2);
  });

  it("a takeover of a stopped process's claim says taken_over; a denial says denied", async () => {
    let now = 1_000_000;
    const clock = () => now;
    const store = memoryStore({ clock });
    let runs = 0;
    const book = defineTool({ name: "book", effect: "keyed", run: () => ({ n: ++runs }) });
    const key = idempotencyKey("task-5", "book", {});
    // A process that stopped mid-call: its claim is in the store, with a lease that then runs out.
    await store.claim(`call:${key}`, {
      fingerprint: key,
      token: "dead",
      leaseMs: 1_000,
      ttlMs: 60_000,
      data: JSON.stringify({
        v: 1,
        taskId: "task-5",
        tool: "book",
        effect: "keyed",
        argsHash: "x",
        args: "{}",
        events: [],
      }),
    });
    now += 5_000;
    const harness = tracedHarness({ store, clock }, telemetry);
    await harness.call("task-5", book, {});
    expect(spans("execute_tool book")[0]!.attributes[Attr.outcome]).toBe("taken_over");

    const approve = defineTool({ name: "pay", effect: "keyed", requiresApproval: true, run: () => "paid" });
    const plain = createHarness({ store });
    const payKey = plain.key("task-6", approve, {});
    const parked = harness.call("task-6", approve, {});
    await expect.poll(async () => (await plain.get(payKey))?.state).toBe("awaiting_approval");
    await plain.deny(payKey, "not this month");
    await expect(parked).rejects.toThrow(/not this month/);
    const denied = spans("execute_tool pay")[0]!;
    expect(denied.attributes).toMatchObject({ [Attr.outcome]: "denied", [Attr.key]: payKey });
  });

  it("validates its options, naming the one at fault", () => {
    expect(() => tracedHarness({}, { tracerProvider: {} as never })).toThrow(/options\.tracerProvider/);
    expect(() => tracedHarness({}, { meterProvider: 1 as never })).toThrow(/options\.meterProvider/);
    expect(() => tracedHarness({ leaseMs: -1 })).toThrow(/leaseMs/);
  });

  it("without an SDK (the global no-op providers) a traced harness works unchanged", async () => {
    const harness = tracedHarness({ store: memoryStore() });
    const tool = defineTool({ name: "t", effect: "keyed", run: () => 1 });
    expect(await harness.call("task-7", tool, {})).toBe(1);
    expect(trace.getActiveSpan()).toBeUndefined();
  });
});

describe("tracedMcpDedupe", () => {
  it("a server-side span per tool call: executed, then replayed for the same key, refused for a reused key", async () => {
    let runs = 0;
    const notes = await tracedNotes(telemetry, (text) => {
      runs++;
      return { content: [{ type: "text", text: `note ${runs}: ${text}` }] };
    });
    const send = (text: string) => notes.call("k-1", text);
    try {
      await send("hi");
      const replay = await send("hi");
      const reused = await send("other");
      expect(runs).toBe(1);
      expect(replay._meta?.[REPLAYED_META]).toBe(true);
      expect(reused.isError).toBe(true);
    } finally {
      await notes.close();
    }
    const calls = spans("execute_tool add_note");
    expect(calls.map((s) => [s.attributes[Attr.outcome], s.attributes[Attr.key]])).toEqual([
      ["executed", "k-1"],
      ["replayed", "k-1"],
      ["refused", "k-1"],
    ]);
    expect(calls[2]!.attributes[Attr.refusal]).toBe("key_reused");
  });
});

describe("tracedHono", () => {
  it("a span per request the middleware sees: executed, replayed for the same key, refused for a reused key", async () => {
    let runs = 0;
    const charges = tracedHonoCharges(telemetry, async (c) => {
      runs++;
      return c.json({ charge: `ch_${runs}`, body: await c.req.json() }, 201);
    });
    const post = (body: object) => charges.post("k-http-1", body);
    const { turn } = await inTurn("server request", async () => {
      expect((await post({ cents: 5 })).status).toBe(201);
      expect((await post({ cents: 5 })).headers.get("idempotent-replayed")).toBe("true");
      expect((await post({ cents: 6 })).status).toBe(422);
      return undefined;
    });
    expect(runs).toBe(1);
    const requests = spans("idempotency POST");
    expect(
      requests.map((s) => [s.attributes[Attr.outcome], s.attributes["http.response.status_code"]]),
    ).toEqual([
      ["executed", 201],
      ["replayed", 201],
      ["refused", 422],
    ]);
    for (const span of requests) {
      expect(span.attributes[Attr.key]).toBe("k-http-1");
      expect(parentOf(span)).toBe(turn);
    }
  });
});

describe("tracedExpress", () => {
  it("a span per request on a real listener, ended with the response: executed, replayed, refused", async () => {
    let runs = 0;
    const charges = await tracedExpressCharges(telemetry, (_req, res) => {
      runs++;
      res.status(201).json({ charge: `ch_${runs}` });
    });
    const post = (body: object) => charges.post("k-express-1", body);
    try {
      expect((await post({ cents: 5 })).status).toBe(201);
      expect((await post({ cents: 5 })).headers.get("idempotent-replayed")).toBe("true");
      expect((await post({ cents: 6 })).status).toBe(422);
    } finally {
      charges.close();
    }
    expect(runs).toBe(1);
    await expect.poll(() => spans("idempotency POST").length).toBe(3);
    expect(
      spans("idempotency POST").map((s) => [
        s.attributes[Attr.outcome],
        s.attributes["http.response.status_code"],
        s.attributes[Attr.key],
      ]),
    ).toEqual([
      ["executed", 201, "k-express-1"],
      ["replayed", 201, "k-express-1"],
      ["refused", 422, "k-express-1"],
    ]);
  });
});

/** Where a broken telemetry pipeline throws: a span processor when a span starts or ends, or a meter's instrument. */
const BREAKS = ["span start", "span end", "exporter", "instrument"] as const;
type Break = (typeof BREAKS)[number];

/**
 * A real SDK pipeline that throws at `where`: a span processor whose `onStart` or `onEnd` throws, or a meter whose
 * view's attribute processor throws inside every `counter.add`.
 */
function brokenTelemetry(where: Break) {
  const fail = (what: string) => () => {
    throw new Error(`telemetry down: ${what}`);
  };
  const processor: SpanProcessor = {
    onStart: where === "span start" ? fail("onStart") : () => {},
    onEnd: where === "span end" ? fail("onEnd") : () => {},
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  // An exporter that throws, behind the SDK's own processor and a metric reader that exports every 50 ms.
  const exporter: SpanExporter & PushMetricExporter = {
    export: fail("export"),
    shutdown: async () => {},
    forceFlush: async () => {},
  };
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [where === "exporter" ? new SimpleSpanProcessor(exporter) : processor],
  });
  const meterProvider = new MeterProvider({
    readers: [
      where === "exporter"
        ? new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 50, exportTimeoutMillis: 40 })
        : new OnDemandReader(),
    ],
    views:
      where === "instrument"
        ? [{ instrumentName: "*", attributesProcessors: [{ process: fail("instrument") }] }]
        : [],
  });
  return { tracerProvider, meterProvider };
}

/**
 * One IdemkeyWarning for the whole test, however many calls met the failure; none for an exporter, whose failures
 * the SDK's processors and readers catch themselves (its global error handler), so they never reach the call.
 */
function expectOneWarning(seen: string[], where: Break): void {
  if (where === "exporter") {
    expect(seen).toEqual([]);
    return;
  }
  expect(seen).toHaveLength(1);
  expect(seen[0]).toMatch(/^idemkey: .*telemetry down/);
}

describe.each(BREAKS)("telemetry that throws at %s never changes an outcome", (where) => {
  it("tracedHarness: the call returns its value, the effect happens once, a replay returns it, one warning", async () => {
    const effects = effectLog("otel-harness");
    const warnings = idemkeyWarnings();
    try {
      const send = defineTool({
        name: "send_email",
        effect: "keyed",
        run: (args: { to: string }, ctx) => {
          effects.effect(ctx.idempotencyKey);
          return { sent: args.to };
        },
      });
      const harness = tracedHarness({ store: memoryStore() }, brokenTelemetry(where));
      expect(await harness.call("task-b", send, { to: "ada" })).toEqual({ sent: "ada" });
      expect(await harness.call("task-b", send, { to: "ada" })).toEqual({ sent: "ada" });
      expect(await harness.callWithOutcome("task-b", send, { to: "ada" })).toMatchObject({
        value: { sent: "ada" },
        replayed: true,
      });
      expect(effects.count(idempotencyKey("task-b", "send_email", { to: "ada" }))).toBe(1);
    } finally {
      effects.cleanup();
    }
    const seen = await warnings.stop();
    expectOneWarning(seen, where);
  });

  it("tracedMcpDedupe: the tool call answers, the handler runs once, a replay answers, one warning", async () => {
    const effects = effectLog("otel-mcp");
    const warnings = idemkeyWarnings();
    const notes = await tracedNotes(brokenTelemetry(where), (text) => {
      effects.effect(text);
      return { content: [{ type: "text", text: `noted: ${text}` }] };
    });
    const send = () => notes.call("k-b", "hi");
    try {
      const first = await send();
      const replay = await send();
      expect(first.isError).toBeFalsy();
      expect(first.content).toEqual([{ type: "text", text: "noted: hi" }]);
      expect(replay.content).toEqual(first.content);
      expect(replay._meta?.[REPLAYED_META]).toBe(true);
      expect(effects.count("hi")).toBe(1);
    } finally {
      await notes.close();
      effects.cleanup();
    }
    const seen = await warnings.stop();
    expectOneWarning(seen, where);
  });

  it("tracedHono: the request is answered, the handler runs once, a replay is answered, one warning", async () => {
    const effects = effectLog("otel-hono");
    const warnings = idemkeyWarnings();
    const charges = tracedHonoCharges(brokenTelemetry(where), async (c) => {
      effects.effect("charge");
      return c.json({ charge: "ch_1" }, 201);
    });
    const post = () => charges.post("k-hono-b", { cents: 5 });
    try {
      const first = await post();
      const replay = await post();
      expect(first.status).toBe(201);
      expect(await first.json()).toEqual({ charge: "ch_1" });
      expect(replay.status).toBe(201);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expect(effects.count("charge")).toBe(1);
    } finally {
      effects.cleanup();
    }
    const seen = await warnings.stop();
    expectOneWarning(seen, where);
  });

  it("tracedExpress: the request is answered, the handler runs once, a replay is answered, one warning", async () => {
    const effects = effectLog("otel-express");
    const warnings = idemkeyWarnings();
    const charges = await tracedExpressCharges(brokenTelemetry(where), (_req, res) => {
      effects.effect("charge");
      res.status(201).json({ charge: "ch_1" });
    });
    const post = () => charges.post("k-express-b", { cents: 5 });
    try {
      const first = await post();
      expect(first.status).toBe(201);
      expect(await first.json()).toEqual({ charge: "ch_1" });
      const replay = await post();
      expect(replay.status).toBe(201);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      await replay.arrayBuffer();
      expect(effects.count("charge")).toBe(1);
    } finally {
      charges.close();
      effects.cleanup();
    }
    // The span ends when the response has finished, after the client read it.
    if (where !== "exporter") await expect.poll(() => warnings.seen.length).toBe(1);
    const seen = await warnings.stop();
    expectOneWarning(seen, where);
  });
});
