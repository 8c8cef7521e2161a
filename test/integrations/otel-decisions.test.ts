import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { type Attributes, context, propagation } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import express from "express";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { idempotency as expressIdempotency } from "../../src/express/index.js";
import { idempotency } from "../../src/hono/index.js";
import {
  defineTool,
  IdempotencyConflictError,
  idempotencyKey,
  memoryStore,
  OutcomeUnknownError,
  type Store,
} from "../../src/index.js";
import { sha256Hex } from "../../src/key/idempotency-key.js";
import { IDEMPOTENCY_KEY_META, mcpDedupe } from "../../src/mcp/index.js";
import {
  Attr,
  tracedEvents,
  tracedExpress,
  tracedHarness,
  tracedHono,
  tracedMcpDedupe,
} from "../../src/otel/index.js";
import { serve } from "../inspector/support.js";
import { baseUrl, listen } from "../owner/apps.js";
import { otelPipeline, useContextManager } from "../support/otel.js";

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

/** A promise and the function that settles it, for a handler held until the test lets it go. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

describe("tracedHarness: one count per decision", () => {
  it("replayed: each call answered from the ledger is one replay, and the tool runs once", async () => {
    const t = otelPipeline();
    let runs = 0;
    const tool = defineTool({ name: "send", effect: "keyed", run: () => ++runs });
    const harness = tracedHarness({ store: memoryStore() }, t.telemetry);
    for (let i = 0; i < 3; i++) await harness.call("task", tool, { to: "a" });
    expect(runs).toBe(1);
    const counts = await t.counts();
    expect(counts["idemkey.replays"]).toBe(2);
    expect(counts["idemkey.calls{replayed}"]).toBe(2);
    expect(counts["idemkey.calls{executed}"]).toBe(1);
  });

  it("waited: a call that waits for the same call running in another process is one wait", async () => {
    const t = otelPipeline();
    const held = gate();
    const started = gate();
    let runs = 0;
    const tool = defineTool({
      name: "send",
      effect: "keyed",
      run: async () => {
        runs++;
        started.open();
        await held.opened;
        return "sent";
      },
    });
    const store = memoryStore();
    // The other process's claims that found the first call pending: how the test knows it is waiting.
    let sawPending = 0;
    const otherStore: Store = {
      ...store,
      async claim(key, input) {
        const claimed = await store.claim(key, input);
        if (claimed.status === "exists" && claimed.record.state === "pending") sawPending++;
        return claimed;
      },
    };
    const harness = tracedHarness({ store }, t.telemetry);
    const other = tracedHarness({ store: otherStore, wait: { minDelayMs: 1, maxDelayMs: 5 } }, t.telemetry);
    const first = harness.call("task", tool, { to: "a" });
    await started.opened;
    const second = other.call("task", tool, { to: "a" });
    await expect.poll(() => sawPending).toBeGreaterThan(0);
    held.open();
    expect(await Promise.all([first, second])).toEqual(["sent", "sent"]);
    expect(runs).toBe(1);
    const counts = await t.counts();
    expect(counts["idemkey.waits{pending}"]).toBe(1);
    expect(counts["idemkey.calls{waited}"]).toBe(1);
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
    const counts = await t.counts();
    expect(counts["idemkey.conflicts"]).toBe(1);
    expect(counts["idemkey.calls{failed}"]).toBe(1);
  });

  it("unknown surfaced, then resolved by a person: one unknown, one resolution by harness.resolve, then replays", async () => {
    const t = otelPipeline();
    let sends = 0;
    const wire = defineTool({
      name: "wire",
      effect: "unguarded",
      run: () => {
        sends++;
        throw new Error("socket hang up");
      },
    });
    const harness = tracedHarness({ store: memoryStore() }, t.telemetry);
    await expect(harness.call("task", wire, { cents: 9 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect((await t.counts())["idemkey.outcome_unknown"]).toBe(1);

    const key = idempotencyKey("task", "wire", { cents: 9 });
    await harness.resolve(key, { result: "wired" }, { by: "ana" });
    expect(await harness.call("task", wire, { cents: 9 })).toBe("wired");
    expect(sends).toBe(1);
    const counts = await t.counts();
    expect(counts["idemkey.outcome_unknown"]).toBe(1);
    expect(counts["idemkey.resolutions{result}"]).toBe(1);
    expect(counts["idemkey.replays"]).toBe(1);
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
    let sends = 0;
    // The owner's own record of what it did: what reconcile asks, apart from the harness.
    const owner = new Set<string>();
    const wire = defineTool({
      name: "wire",
      effect: "unguarded",
      run: (_args, ctx) => {
        sends++;
        owner.add(ctx.idempotencyKey);
        throw new Error("socket hang up");
      },
      reconcile: (_args, ctx) =>
        owner.has(ctx.idempotencyKey) ? { status: "done", result: "wired" } : { status: "not_done" },
    });
    const harness = tracedHarness({ store: memoryStore() }, t.telemetry);
    // The harness asks reconcile as soon as the attempt's outcome is unknown: the call returns what it found.
    expect(await harness.call("task", wire, { cents: 9 })).toBe("wired");
    expect(await harness.call("task", wire, { cents: 9 })).toBe("wired");
    expect(sends).toBe(1);
    const counts = await t.counts();
    expect(counts["idemkey.resolutions{reconcile}"]).toBe(1);
    expect(counts["idemkey.replays"]).toBe(1);
  });

  it("resolved by a person on the inspector's page: one resolution, counted through tracedEvents", async () => {
    const t = otelPipeline();
    let sends = 0;
    const wire = defineTool({
      name: "wire",
      effect: "unguarded",
      run: () => {
        sends++;
        throw new Error("socket hang up");
      },
    });
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
    expect(sends).toBe(1);
    const counts = await t.counts();
    expect(counts["idemkey.resolutions{result}"]).toBe(1);
    const resolve = t.spans().filter((s) => s.name === "resolve wire");
    expect(resolve.map((s) => s.attributes[Attr.by])).toEqual(["bo"]);
  });

  it("resolved as not done ({ retry: true }) is one resolution of its own, and the next call runs", async () => {
    const t = otelPipeline();
    let sends = 0;
    const wire = defineTool({
      name: "wire",
      effect: "unguarded",
      run: () => {
        sends++;
        if (sends === 1) throw new Error("socket hang up");
        return "wired";
      },
    });
    const harness = tracedHarness({ store: memoryStore() }, t.telemetry);
    await expect(harness.call("task", wire, { cents: 9 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    await harness.resolve(idempotencyKey("task", "wire", { cents: 9 }), { retry: true }, { by: "ana" });
    expect(await harness.call("task", wire, { cents: 9 })).toBe("wired");
    expect(sends).toBe(2);
    const counts = await t.counts();
    expect(counts["idemkey.resolutions{retry}"]).toBe(1);
    expect(counts["idemkey.resolutions{result}"]).toBeUndefined();
  });
});

describe("owner bridges: one count per decision", () => {
  it("tracedHono: a replay, a reused key (conflict), a key in flight and an unknown outcome are counted once each", async () => {
    const t = otelPipeline();
    const held = gate();
    const started = gate();
    let runs = 0;
    const app = new Hono();
    app.post(
      "/charges",
      tracedHono(idempotency({ store: memoryStore(), scope: "single-tenant" }), t.telemetry),
      async (c) => {
        runs++;
        const body = await c.req.json();
        if (body.slow) {
          started.open();
          await held.opened;
        }
        if (body.boom) throw new Error("connection reset after the charge");
        return c.json({ charge: `ch_${runs}` }, 201);
      },
    );
    // Hono's own handler would print the handler's throw; the answer is what the test reads.
    app.onError((_error, c) => c.text("failed", 500));
    const post = (key: string, body: object) =>
      app.request("/charges", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify(body),
      });
    expect((await post("k1", { cents: 5 })).status).toBe(201);
    expect((await post("k1", { cents: 5 })).headers.get("idempotent-replayed")).toBe("true");
    expect((await post("k1", { cents: 6 })).status).toBe(422);
    const slow = post("k2", { slow: true });
    await started.opened;
    expect((await post("k2", { slow: true })).status).toBe(409);
    held.open();
    expect((await slow).status).toBe(201);
    expect((await post("k3", { boom: true })).status).toBe(500);
    const unknown = await post("k3", { boom: true });
    expect(unknown.status).toBe(409);
    expect(runs).toBe(3);

    const counts = await t.counts();
    expect(counts["idemkey.replays"]).toBe(1);
    expect(counts["idemkey.conflicts"]).toBe(1);
    expect(counts["idemkey.in_flight"]).toBe(1);
    expect(counts["idemkey.outcome_unknown"]).toBe(1);
    const refusals = t
      .spans()
      .filter((s) => s.attributes[Attr.outcome] === "refused")
      .map((s) => s.attributes[Attr.refusal]);
    expect(refusals).toEqual(["key_reused", "key_in_flight", "outcome_unknown"]);
  });

  it("tracedExpress: a reused key is one conflict and a key in flight one in_flight, on a real listener", async () => {
    const t = otelPipeline();
    const held = gate();
    const started = gate();
    let runs = 0;
    const app = express();
    app.post(
      "/charges",
      tracedExpress(expressIdempotency({ store: memoryStore(), scope: "single-tenant" }), t.telemetry),
      async (req, res) => {
        runs++;
        if (req.get("x-slow") === "1") {
          started.open();
          await held.opened;
        }
        res.status(201).json({ charge: `ch_${runs}` });
      },
    );
    const server = await listen(app);
    const post = (key: string, body: { slow?: boolean; cents?: number }) =>
      fetch(`${baseUrl(server)}/charges`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "idempotency-key": key,
          ...(body.slow ? { "x-slow": "1" } : {}),
        },
        body: JSON.stringify(body),
      });
    try {
      expect((await post("k1", { cents: 5 })).status).toBe(201);
      expect((await post("k1", { cents: 5 })).status).toBe(201);
      expect((await post("k1", { cents: 6 })).status).toBe(422);
      const slow = post("k2", { slow: true });
      await started.opened;
      expect((await post("k2", { slow: true })).status).toBe(409);
      held.open();
      expect((await slow).status).toBe(201);
    } finally {
      server.close();
    }
    expect(runs).toBe(2);
    await expect.poll(() => t.spans().length).toBe(5);
    const counts = await t.counts();
    expect(counts["idemkey.replays"]).toBe(1);
    expect(counts["idemkey.conflicts"]).toBe(1);
    expect(counts["idemkey.in_flight"]).toBe(1);
  });

  it("tracedMcpDedupe: a replay, a reused key and a key in flight are counted once each", async () => {
    const t = otelPipeline();
    const held = gate();
    const started = gate();
    let runs = 0;
    const server = new McpServer({ name: "notes", version: "1.0.0" });
    const idempotent = tracedMcpDedupe(mcpDedupe({ store: memoryStore() }), t.telemetry);
    server.registerTool(
      "add_note",
      { inputSchema: { text: z.string() } },
      idempotent("add_note", async ({ text }) => {
        runs++;
        if (text === "slow") {
          started.open();
          await held.opened;
        }
        return { content: [{ type: "text", text }] };
      }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(clientSide);
    const send = (key: string, text: string) =>
      client.callTool({ name: "add_note", arguments: { text }, _meta: { [IDEMPOTENCY_KEY_META]: key } });
    try {
      await send("k-1", "hi");
      await send("k-1", "hi");
      expect((await send("k-1", "other")).isError).toBe(true);
      const slow = send("k-2", "slow");
      await started.opened;
      expect((await send("k-2", "slow")).isError).toBe(true);
      held.open();
      expect((await slow).isError).toBeFalsy();
    } finally {
      await client.close();
    }
    expect(runs).toBe(2);
    const counts = await t.counts();
    expect(counts["idemkey.replays"]).toBe(1);
    expect(counts["idemkey.conflicts"]).toBe(1);
    expect(counts["idemkey.in_flight"]).toBe(1);
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
      const app = new Hono();
      app.post(
        "/c",
        tracedHono(idempotency({ store: memoryStore(), scope: "single-tenant" }), t.telemetry),
        (c) => c.json({ ok: true }),
      );
      const post = (body: object) =>
        app.request("/c", {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key },
          body: JSON.stringify(body),
        });
      await post({ a: 1 });
      await post({ a: 1 });
      await post({ a: 2 });

      const ex = express();
      ex.post(
        "/c",
        tracedExpress(expressIdempotency({ store: memoryStore(), scope: "single-tenant" }), t.telemetry),
        (_req, res) => {
          res.status(201).json({ ok: true });
        },
      );
      const server = await listen(ex);
      try {
        for (const body of [{ a: 1 }, { a: 2 }]) {
          await fetch(`${baseUrl(server)}/c`, {
            method: "POST",
            headers: { "content-type": "application/json", "idempotency-key": key },
            body: JSON.stringify(body),
          });
        }
      } finally {
        server.close();
      }

      const mcp = new McpServer({ name: "notes", version: "1.0.0" });
      const idempotent = tracedMcpDedupe(mcpDedupe({ store: memoryStore() }), t.telemetry);
      mcp.registerTool(
        "note",
        { inputSchema: { text: z.string() } },
        idempotent("note", async ({ text }) => ({ content: [{ type: "text", text }] })),
      );
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await mcp.connect(serverSide);
      const client = new Client({ name: "test", version: "1.0.0" });
      await client.connect(clientSide);
      try {
        for (const text of ["hi", "hi", "other"]) {
          await client.callTool({
            name: "note",
            arguments: { text },
            _meta: { [IDEMPOTENCY_KEY_META]: key },
          });
        }
      } finally {
        await client.close();
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
