import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Task } from "@a2a-js/sdk";
import type { AgentExecutionEvent, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import { afterAll, describe, expect, it } from "vitest";
import { foldEvents, idempotentExecutor, keyedMessage, REFUSAL_METADATA } from "../../src/a2a/index.js";
import { keyedId, randomSecret } from "../../src/inspector/keyed-id.js";
import { type KeyView, listKeys } from "../../src/inspector/owner-keys.js";
import { redactor } from "../../src/inspector/redact.js";
import { memoryStore } from "../../src/store/memory.js";
import { testClock } from "../stores/contract.js";
import { bookingExecutor } from "./fixtures/booking-agent.js";
import { bookings, bookingText } from "./support.js";

/**
 * Issue 43, case 7, on the A2A executor, in process: an execution whose lease lapsed while it ran is taken over by a
 * retry (refused `outcome_unknown`), then finishes; its answer, saved late, settles the key, and a further retry gets
 * it. Bookings are counted in the agent's own effects file.
 */
const dir = mkdtempSync(join(tmpdir(), "idemkey-a2a-late-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The request context the SDK's handler would build for `message`, with no task yet. */
function contextFor(message: ReturnType<typeof keyedMessage>, taskId: string): RequestContext {
  return { userMessage: message, taskId, contextId: "ctx-1", task: undefined } as unknown as RequestContext;
}

/** An event bus that keeps what was published on it. */
function bus(): { bus: ExecutionEventBus; events: AgentExecutionEvent[] } {
  const events: AgentExecutionEvent[] = [];
  const keeping = {
    publish: (event: AgentExecutionEvent) => events.push(event),
    finished: () => {},
    on: () => keeping,
    off: () => keeping,
    once: () => keeping,
    removeAllListeners: () => keeping,
  };
  return { bus: keeping as unknown as ExecutionEventBus, events };
}

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** The refusal mark of an answer (a message, or a task failed with the message), if any. */
function refusalOf(events: AgentExecutionEvent[]): unknown {
  const answer = foldEvents(events as Parameters<typeof foldEvents>[0]);
  if (answer?.kind === "message") return answer.data.metadata?.[REFUSAL_METADATA];
  return answer?.data.status?.message?.metadata?.[REFUSAL_METADATA];
}

describe("idempotentExecutor: a late save settles an unknown outcome", () => {
  it("a retry that takes over a running execution is refused outcome_unknown; the execution's task, saved late, is what later retries get; one booking", async () => {
    const effects = join(dir, "bookings.txt");
    writeFileSync(effects, "");
    const clock = testClock();
    const store = memoryStore({ clock });
    const booked = gate();
    const release = gate();
    let first = true;
    const executor = idempotentExecutor(
      bookingExecutor(effects, {
        onEffect: () => booked.open(),
        afterEffect: async () => {
          if (first) {
            first = false;
            await release.promise;
          }
        },
      }),
      { store, leaseMs: 60_000, waitMs: 0, scope: () => "tenant-1" },
    );
    const message = keyedMessage("book-late-1", { text: "a table for two" });

    const one = bus();
    const running = executor.execute(contextFor(message, "task-1"), one.bus);
    await booked.promise;
    clock.advance(60_000);

    const two = bus();
    await executor.execute(contextFor(message, "task-2"), two.bus);
    expect(refusalOf(two.events)).toBe("outcome_unknown");

    release.open();
    await running;
    const ran = foldEvents(one.events as Parameters<typeof foldEvents>[0]);
    expect(ran?.kind).toBe("task");

    const three = bus();
    await executor.execute(contextFor(message, "task-3"), three.bus);
    expect(refusalOf(three.events)).toBeUndefined();
    const replayed = foldEvents(three.events as Parameters<typeof foldEvents>[0]);
    expect(replayed?.kind).toBe("task");
    const [booking] = bookings(effects);
    expect(bookingText(replayed!.data as Task)).toBe(`booked ${booking!.id}`);
    expect(bookings(effects)).toHaveLength(1);

    const asIs: KeyView = { redact: redactor([]), maskScope: false, id: keyedId(randomSecret()) };
    const { keys } = await listKeys(store, asIs, {}, 0, 10, 100);
    expect(keys[0]).toMatchObject({ kind: "a2a", state: "completed" });
    expect(keys[0]!.events?.map((e) => e.type)).toEqual(["taken_over", "resolved"]);
    expect(keys[0]!.events?.[1]).toMatchObject({ how: "late_completion" });
  });
});
