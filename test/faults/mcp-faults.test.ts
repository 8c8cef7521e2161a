import { afterAll, describe, expect, it } from "vitest";
import { LeaseLostError } from "../../src/errors/index.js";
import { keyedId, randomSecret } from "../../src/inspector/keyed-id.js";
import { type KeyView, listKeys } from "../../src/inspector/owner-keys.js";
import { redactor } from "../../src/inspector/redact.js";
import { mcpDedupe } from "../../src/mcp/index.js";
import { IDEMPOTENCY_KEY_META, REFUSAL_META, REPLAYED_META } from "../../src/mcp/meta.js";
import type { McpErrorEvent } from "../../src/mcp/server/dedupe-options.js";
import { memoryStore } from "../../src/store/memory.js";
import { testClock } from "../stores/contract.js";
import { effectLog } from "../support/effect-log.js";

/**
 * MCP dedupe on the claim layer: a call taken over after its lease lapsed is refused, never run twice; its result,
 * saved late, settles the key (issue 43, case 7).
 */
const log = effectLog();
afterAll(() => log.cleanup());

/** The inspector's redaction, off. */
const asIs: KeyView = { redact: redactor([]), maskScope: false, id: keyedId(randomSecret()) };

const extra = (key: string) => ({ _meta: { [IDEMPOTENCY_KEY_META]: key } });

/** A promise and what settles it: the gate a test opens to let a tool go on, or the sign a tool gives it is inside. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

function setup(rerunAfterTakeover?: boolean) {
  const clock = testClock();
  const store = memoryStore({ clock });
  const dedupe = mcpDedupe({ store, leaseMs: 1_000, rerunAfterTakeover });
  const gate = signal();
  const inside = signal();
  let first = true;
  const tool = dedupe("create_issue", async (args: { title: string }, e: ReturnType<typeof extra>) => {
    log.effect(String(e._meta[IDEMPOTENCY_KEY_META]));
    if (first) {
      first = false;
      inside.resolve();
      await gate.promise;
    }
    return { content: [{ type: "text" as const, text: `created ${args.title}` }] };
  });
  return { clock, tool, open: gate.resolve, inside: inside.promise, store };
}

describe("MCP dedupe after a takeover", () => {
  it("refuses a retry that takes over a call which may have run (outcome_unknown); the call's result, saved late, settles the key and later retries replay it", async () => {
    const { clock, tool, open, inside, store } = setup();
    const key = "mcp-takeover-1";
    const stuck = tool({ title: "a" }, extra(key));
    await inside;
    clock.advance(1_000);
    const retry = await tool({ title: "a" }, extra(key));
    expect(retry.isError).toBe(true);
    expect(retry._meta?.[REFUSAL_META]).toBe("outcome_unknown");
    open();
    const first = await stuck;
    expect(first.isError).toBeUndefined();
    const later = await tool({ title: "a" }, extra(key));
    expect(later.isError).toBeUndefined();
    expect(later._meta?.[REPLAYED_META]).toBe(true);
    expect(later.content).toEqual(first.content);
    expect(log.count(key)).toBe(1);
    const { keys } = await listKeys(store, asIs, {}, 0, 10, 100);
    expect(keys[0]).toMatchObject({ kind: "mcp", state: "completed" });
    expect(keys[0]!.events?.map((e) => e.type)).toEqual(["taken_over", "resolved"]);
    expect(keys[0]!.events?.[1]).toMatchObject({ how: "late_completion" });
  });

  it("runs it again when the server opted in (rerunAfterTakeover)", async () => {
    const { clock, tool, open, inside } = setup(true);
    const key = "mcp-takeover-2";
    const stuck = tool({ title: "b" }, extra(key));
    await inside;
    clock.advance(1_000);
    const retry = await tool({ title: "b" }, extra(key));
    expect(retry.isError).toBeUndefined();
    open();
    await stuck;
    expect(log.count(key)).toBe(2);
  });
});

describe("MCP dedupe losing its claim while the tool runs", () => {
  it("reports the lost lease to onError (phase renew) once, as soon as a renewal finds it, not after the tool", async () => {
    const store = memoryStore();
    const events: McpErrorEvent[] = [];
    const dedupe = mcpDedupe({ store, leaseMs: 60, onError: (event) => events.push(event) });
    const gate = signal();
    const inside = signal();
    const tool = dedupe("create_issue", async () => {
      inside.resolve();
      await gate.promise;
      return { content: [{ type: "text" as const, text: "created" }] };
    });
    const key = "mcp-lost-1";
    const running = tool({}, extra(key));
    await inside.promise;
    // Another holder takes the record: the next renewal (every 20 ms) matches nothing.
    const [record] = await store.list({ state: "pending" });
    await store.update(record!.key, { state: "pending" }, { token: "someone-else" });
    for (let i = 0; i < 200 && events.length === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ phase: "renew", tool: "create_issue", scope: "", key });
    expect(events[0]!.error).toBeInstanceOf(LeaseLostError);
    gate.resolve();
    expect((await running).isError).toBeUndefined();
    expect(events).toHaveLength(1);
  });
});
