import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Message, Task } from "@a2a-js/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { a2aTool, keyedMessage, REFUSAL_METADATA, Refusal } from "../../src/a2a/index.js";
import { IdempotencyConflictError } from "../../src/errors/idempotency-conflict-error.js";
import { createHarness } from "../../src/harness/create-harness.js";
import { memoryStore } from "../../src/store/memory.js";
import { faultProxy } from "../support/fault-proxy.js";
import { startBookingAgent } from "./fixtures/booking-agent.js";
import { bookings, bookingText, clientFor, joinWatch } from "./support.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function effectsFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-a2a-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "bookings.log");
  appendFileSync(file, "");
  return file;
}

const harness = () => createHarness({ retry: { minDelayMs: 1, maxDelayMs: 5, jitter: false } });

async function agent(options: Parameters<typeof startBookingAgent>[0]) {
  const started = await startBookingAgent(options);
  cleanups.push(started.close);
  return started;
}

describe("idemkey/a2a with the SDK's real client and server over loopback", () => {
  for (const stream of [false, true]) {
    it(`a lost answer (${stream ? "message/stream" : "message/send"}): the harness's retry is the same message, answered from the record, one booking`, async () => {
      const effects = effectsFile();
      const server = await agent({ effects, executor: { store: memoryStore(), pollMs: 5 } });
      const proxy = await faultProxy(server.port);
      cleanups.push(() => proxy.close());
      const book = a2aTool(await clientFor(`http://127.0.0.1:${proxy.port}/a2a`), {
        name: "book",
        effect: "keyed",
        stream,
      });

      const dropped = proxy.dropNextReply();
      const task = (await harness().call("trip-1", book, { text: "table for two at 8" })) as Task;
      await dropped;

      const made = bookings(effects);
      expect(made).toHaveLength(1);
      expect(bookingText(task)).toBe(`booked ${made[0]?.id}`);
      expect(task.status?.state).toBe(3); // TASK_STATE_COMPLETED
      // The proxy saw the dropped attempt and the retry: two connections, one booking.
      expect(proxy.connections).toBeGreaterThanOrEqual(2);
    });
  }

  it("a duplicate sent while the first still runs joins it: it waits, then gets the same task; one booking", async () => {
    const effects = effectsFile();
    const { store, joined } = joinWatch(memoryStore());
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let booked: () => void = () => {};
    const effect = new Promise<void>((resolve) => {
      booked = resolve;
    });
    const server = await agent({
      effects,
      executor: { store, pollMs: 5 },
      hooks: { onEffect: () => booked(), afterEffect: () => gate },
    });
    const client = await clientFor(server.url);
    const book = a2aTool(client, { name: "book", effect: "keyed" });
    // Two harnesses (two agents, or one restarted) derive the same key for the same call.
    const first = harness().call("trip-2", book, { text: "table for four" });
    await effect;
    const second = a2aTool(client, { name: "book", effect: "keyed", stream: true });
    const duplicate = harness().call("trip-2", second, { text: "table for four" });
    await joined;
    open();
    const [a, b] = (await Promise.all([first, duplicate])) as [Task, Task];

    const made = bookings(effects);
    expect(made).toHaveLength(1);
    expect(bookingText(a)).toBe(`booked ${made[0]?.id}`);
    expect(bookingText(b)).toBe(bookingText(a));
    expect(b.id).toBe(a.id);
    expect(b.status?.state).toBe(a.status?.state);
  });

  it("the same key with other content is refused as key_reused, an IdempotencyConflictError; the agent does not run", async () => {
    const effects = effectsFile();
    const server = await agent({ effects, executor: { store: memoryStore() } });
    const client = await clientFor(server.url);
    // The key comes from the booking's reference alone: another text under the same reference reuses the key.
    const tool = (name: string) =>
      a2aTool<{ ref: string; text: string }>(client, {
        name,
        effect: "keyed",
        identity: (args) => args.ref,
        message: (args) => ({ text: args.text }),
      });
    const task = (await harness().call("trip-3", tool("book"), {
      ref: "r-1",
      text: "table for two",
    })) as Task;
    await expect(
      harness().call("trip-3", tool("book"), { ref: "r-1", text: "table for six" }),
    ).rejects.toBeInstanceOf(IdempotencyConflictError);
    expect(bookings(effects)).toHaveLength(1);
    expect(bookingText(task)).toBe(`booked ${bookings(effects)[0]?.id}`);

    // On the wire: an agent message whose metadata names the refusal.
    const other = keyedMessage(task.history[0]?.metadata?.["dev.idemkey/idempotency-key"], {
      text: "table for six",
    });
    const answer = (await client.sendMessage({ message: other } as never)) as Message;
    expect(answer.metadata?.[REFUSAL_METADATA]).toBe(Refusal.keyReused);
    expect(bookings(effects)).toHaveLength(1);
  });

  it("a message without a key runs unprotected, as the agent would without the wrapper", async () => {
    const effects = effectsFile();
    const server = await agent({ effects, executor: { store: memoryStore() } });
    const client = await clientFor(server.url);
    const message = { ...keyedMessage("k", { text: "walk-in" }), metadata: {} };
    await client.sendMessage({ message } as never);
    await client.sendMessage({ message: { ...message, messageId: "m-2" } } as never);
    expect(bookings(effects)).toHaveLength(2);
  });
});
